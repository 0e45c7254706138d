"""Browser widgets of the dashboard (ipyvuetify templates; their Vue code lives here as
strings, so nothing but Python files has to be installed).

- :class:`VegaView`: one Vega-Lite chart. The spec is embedded once; each new frame only
  swaps the chart's named datasets and signals and re-runs Vega's dataflow, instead of
  re-compiling the spec (Solara's VegaLite re-embeds on every change, after a 100 ms
  debounce). The browser reports each frame it has drawn, which lets Play skip
  frames instead of queueing them. A PNG button saves the chart as drawn.
- :class:`ApplicantTable`: the applicants with coloured outcomes; a click on a row picks
  the applicant for the agent view.
- :class:`CopyBox`: a command in a box, with a button that copies it to the clipboard.
- :class:`Address`: keeps the page address on the view shown.
- :class:`PageKeys`: Escape closes the settings drawer; the window's width sets it open
  or closed when the page opens.

Vega, Vega-Lite and vega-embed load through require.js from Solara's CDN path, which the
server answers from its local cache (``scripts/solara-offline-assets.sh``): no request
leaves the server.
"""

from __future__ import annotations

import ipyvuetify as v
import traitlets

_LOAD_VEGA = r"""
function rabmCdn(self) {
    if (self.cdn) return self.cdn;
    if (window.solara && window.solara.cdn) return window.solara.cdn;
    let base = document.body.dataset.baseUrl || document.baseURI;
    if (!base.endsWith('/')) base += '/';
    return base + '_solara/cdn';
}
function rabmRequire(cdn) {
    if (window.requirejs) return Promise.resolve();
    return new Promise((resolve, reject) => {
        const script = document.createElement('script');
        script.src = cdn + '/requirejs@2.3.6/require.js';
        script.onload = resolve;
        script.onerror = reject;
        document.head.appendChild(script);
    });
}
function rabmRows(columns) {
    // {name: [values]} -> [{name: value}]: columns are far cheaper to send than rows
    const keys = Object.keys(columns || {});
    if (!keys.length) return [];
    const n = columns[keys[0]].length;
    const rows = new Array(n);
    for (let i = 0; i < n; i++) {
        const row = {};
        for (const k of keys) row[k] = columns[k][i];
        rows[i] = row;
    }
    return rows;
}
function rabmVega(self) {
    // one load per page, shared by every chart
    if (!window.rabmVegaLibs) {
        const cdn = rabmCdn(self);
        window.rabmVegaLibs = rabmRequire(cdn).then(() => new Promise((resolve, reject) => {
            require.config({paths: {
                'rabm-vega': cdn + '/vega@5/build/vega.min',
                'rabm-vega-lite': cdn + '/vega-lite@5/build/vega-lite.min',
                'rabm-vega-embed': cdn + '/vega-embed@6/build/vega-embed.min',
            }, map: {'*': {'vega': 'rabm-vega', 'vega-lite': 'rabm-vega-lite',
                           'vega-embed': 'rabm-vega-embed'}}});
            require(['rabm-vega', 'rabm-vega-embed'], (vega, embed) => resolve({vega, embed}), reject);
        }));
    }
    return window.rabmVegaLibs;
}
"""

VEGA_TEMPLATE = (
    r"""
<template>
  <div class="rabm-chart" :data-chart="name">
    <div class="rabm-chart-tools">
      <v-btn x-small text class="rabm-png" title="save this chart as a PNG image"
             @click="savePng">PNG</v-btn>
    </div>
    <div ref="plot" class="rabm-plot"></div>
  </div>
</template>
<script>
"""
    + _LOAD_VEGA
    + r"""
module.exports = {
    created() {
        this.view = null;
        this.busy = false;
        this.pending = false;
    },
    mounted() {
        this.embed();
    },
    destroyed() {
        if (this.observer) this.observer.disconnect();
        if (this.view) this.view.finalize();
    },
    watch: {
        spec() { this.embed(); },
        payload() { this.refresh(); },
    },
    methods: {
        async embed() {
            const arrived = performance.now();
            const token = this.embedToken = (this.embedToken || 0) + 1;
            const libs = await rabmVega(this);
            this.libs = libs;
            if (this.view) { this.view.finalize(); this.view = null; }
            const p = this.parsed();
            const spec = JSON.parse(this.spec);
            spec.datasets = {};
            for (const [name, columns] of Object.entries(p.data || {})) {
                spec.datasets[name] = rabmRows(columns);
            }
            spec.params = Object.entries(p.signals || {}).map(([name, value]) => ({name, value}));
            const result = await libs.embed(this.$refs.plot, spec,
                                             {renderer: 'canvas', actions: false});
            if (token !== this.embedToken) { result.view.finalize(); return; }  // superseded
            this.view = result.view;
            this.epoch = p.epoch;
            this.tuples = {};
            for (const [name, field] of Object.entries(p.keys || {})) {
                this.tuples[name] = new Map(this.view.data(name).map(t => [t[field], t]));
            }
            this.$el.rabmView = this.view;  // for tests and dashboards/benchmark.py
            if (this.clickable) {
                this.view.addEventListener('click', (event, item) => {
                    if (item && item.datum && item.datum.id !== undefined) this.pick(item.datum.id);
                });
            }
            if (!this.observer) {
                // Vega-Lite's "container" width follows window resizes only; a layout
                // change (sidebar, columns) resizes the box without one
                this.observer = new ResizeObserver(() => {
                    const width = this.$refs.plot.clientWidth;
                    if (this.view && width > 0 && width !== this.view.signal('width')) {
                        this.view.signal('width', width).runAsync();
                    }
                });
                this.observer.observe(this.$refs.plot);
            }
            this.done(p, arrived);
            this.refresh();
        },
        async refresh() {
            // draw the newest payload only: frames that arrive while drawing are skipped
            if (!this.view || this.parsed().frame === this.drawnFrame) return;
            if (this.busy) { this.pending = true; return; }
            this.busy = true;
            try {
                do {
                    const arrived = performance.now();
                    this.pending = false;
                    const p = this.parsed();
                    const vega = this.libs.vega;
                    for (const [name, values] of Object.entries(p.data || {})) {
                        const field = (p.keys || {})[name];
                        if (field && this.tuples[name] && p.epoch === this.epoch) {
                            this.view.change(name, this.keyedChange(name, field, values, vega));
                        } else {
                            const rows = rabmRows(values);
                            this.view.change(name, vega.changeset().remove(vega.truthy).insert(rows));
                            if (field) this.tuples[name] = new Map(rows.map(r => [r[field], r]));
                        }
                    }
                    this.epoch = p.epoch;
                    for (const [name, value] of Object.entries(p.signals || {})) {
                        this.view.signal(name, value);
                    }
                    await this.view.runAsync();
                    this.done(p, arrived);
                } while (this.pending);
            } finally {
                this.busy = false;
            }
        },
        keyedChange(name, field, values, vega) {
            // rows that stay keep their tuples: Vega encodes only the rows that are new
            const old = this.tuples[name], kept = new Map(), insert = [], remove = [];
            for (const row of rabmRows(values)) {
                const tuple = old.get(row[field]);
                if (tuple) kept.set(row[field], tuple);
                else { kept.set(row[field], row); insert.push(row); }
            }
            for (const [key, tuple] of old) if (!kept.has(key)) remove.push(tuple);
            this.tuples[name] = kept;
            return vega.changeset().remove(remove).insert(insert);
        },
        parsed() {
            if (this.parsedText !== this.payload) {
                this.parsedPayload = JSON.parse(this.payload);
                this.parsedText = this.payload;
            }
            return this.parsedPayload;
        },
        done(p, arrived) {
            // a message, not a synced trait: a trait change would echo the widget's state
            const frame = p.frame;
            this.drawnFrame = frame;
            this.$el.dataset.drawn = frame;
            this.drawn(frame);
            const log = window.rabmDrawn = window.rabmDrawn || [];
            // when each frame arrived and was drawn (dashboards/benchmark.py reads this)
            const tick = (p.signals || {}).tick;
            log.push({chart: this.name, frame, tick, arrived, t: performance.now()});
            if (log.length > 5000) log.splice(0, 1000);
        },
        async savePng() {
            if (!this.view) return;
            const url = await this.view.toImageURL('png', 2);
            const a = document.createElement('a');
            a.href = url;
            a.download = this.filename;
            document.body.appendChild(a);
            a.click();
            a.remove();
        },
    },
}
</script>
"""
)


def _default_cdn() -> str | None:
    import solara.settings

    return None if solara.settings.assets.proxy else solara.settings.assets.cdn


class VegaView(v.VuetifyTemplate):
    """A Vega-Lite chart: ``spec`` (static; a change re-embeds) and ``payload``
    ``{"frame": int, "epoch": int, "data": {dataset: columns}, "signals": {name: value},
    "keys": {dataset: key column}}`` (swapped per frame; within one epoch, a keyed
    dataset's rows are matched by key and only new ones are added, for rows that never
    change once recorded; a new epoch, a new model, replaces them all), both as JSON text: reacton walks every list and dict an element is given in
    search of child elements, thousands of rows per frame, but never looks into a string. The browser reports each frame it has drawn to ``on_drawn(frame)``;
    ``on_pick(id)`` is called with the ``id`` field of a clicked mark when ``clickable``."""

    template = traitlets.Unicode(VEGA_TEMPLATE).tag(sync=True)
    spec = traitlets.Unicode("{}").tag(sync=True)
    payload = traitlets.Unicode('{"frame": -1}').tag(sync=True)
    name = traitlets.Unicode("").tag(sync=True)
    filename = traitlets.Unicode("chart.png").tag(sync=True)
    clickable = traitlets.Bool(False).tag(sync=True)
    cdn = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    on_pick = traitlets.Callable(None, allow_none=True)
    on_drawn = traitlets.Callable(None, allow_none=True)

    @traitlets.default("cdn")
    def _cdn(self):
        return _default_cdn()

    def vue_pick(self, cid):
        if self.on_pick is not None:
            self.on_pick(cid)

    def vue_drawn(self, frame):
        if self.on_drawn is not None:
            self.on_drawn(frame)


TABLE_TEMPLATE = r"""
<template>
  <v-data-table class="rabm-table" :headers="headers" :items="items" item-key="key" dense
                :items-per-page="10" :footer-props="{'items-per-page-options': [10, 50, -1]}"
                :sort-by="sort_by" must-sort :sort-desc="sort_desc" no-data-text="no applicants yet"
                @click:row="(item) => pick(item.id)">
    <template v-slot:item.outcome="{ item }">
      <v-chip x-small label dark :color="colours[item.outcome]" class="rabm-outcome">
        {{ item.outcome }}</v-chip>
    </template>
  </v-data-table>
</template>
<script>
module.exports = {
    computed: {
        items() {
            const columns = JSON.parse(this.rows);
            const keys = Object.keys(columns);
            if (!keys.length) return [];
            return columns[keys[0]].map((_, i) => {
                const row = {};
                for (const k of keys) row[k] = columns[k][i];
                return row;
            });
        },
    },
}
</script>
"""


class ApplicantTable(v.VuetifyTemplate):
    """Rows ``rows`` (JSON text of columns {name: [values]}, among them a unique ``key``,
    ``id`` and ``outcome``; text for the reason given at :class:`VegaView`) under
    ``headers`` (Vuetify data-table headers), sorted by ``sort_by`` (descending if
    ``sort_desc``); outcome chips take ``colours``. A row click calls ``on_pick(id)``."""

    template = traitlets.Unicode(TABLE_TEMPLATE).tag(sync=True)
    headers = traitlets.List().tag(sync=True)
    rows = traitlets.Unicode("{}").tag(sync=True)
    colours = traitlets.Dict().tag(sync=True)
    sort_by = traitlets.Unicode("").tag(sync=True)
    sort_desc = traitlets.Bool(True).tag(sync=True)
    on_pick = traitlets.Callable(None, allow_none=True)

    def vue_pick(self, cid):
        if self.on_pick is not None:
            self.on_pick(cid)


COPY_TEMPLATE = r"""
<template>
  <div class="rabm-copy">
    <pre class="rabm-cli" ref="text">{{ text }}</pre>
    <v-btn small depressed class="rabm-copy-button" @click="copy">
      {{ copied ? 'copied' : 'copy the command' }}</v-btn>
  </div>
</template>
<script>
module.exports = {
    data() { return {copied: false}; },
    methods: {
        async copy() {
            const text = this.text;
            try {
                await navigator.clipboard.writeText(text);
            } catch (e) {
                // plain http from another machine is no secure context: no Clipboard API
                const area = document.createElement('textarea');
                area.value = text;
                document.body.appendChild(area);
                area.select();
                document.execCommand('copy');
                area.remove();
            }
            this.copied = true;
            setTimeout(() => { this.copied = false; }, 2000);
        },
    },
}
</script>
"""


class CopyBox(v.VuetifyTemplate):
    """``text`` in a preformatted box, with a button that copies it to the clipboard."""

    template = traitlets.Unicode(COPY_TEMPLATE).tag(sync=True)
    text = traitlets.Unicode("").tag(sync=True)


ADDRESS_TEMPLATE = r"""
<template><span class="rabm-address" style="display: none"></span></template>
<script>
module.exports = {
    mounted() { this.write(); },
    watch: { query() { this.write(); } },
    methods: {
        write() {
            // replace, not push: Back leaves the page instead of stepping back through ticks
            const url = new URL(window.location.href);
            url.search = this.query ? '?' + this.query : '';
            if (url.href !== window.location.href) {
                window.history.replaceState(window.history.state, '', url.href);
            }
        },
    },
}
</script>
"""


class Address(v.VuetifyTemplate):
    """Writes ``query`` into the page address (history.replaceState: no new history entry),
    so a reload, a bookmark or a shared link comes back to the same view."""

    template = traitlets.Unicode(ADDRESS_TEMPLATE).tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)


KEYS_TEMPLATE = r"""
<template><span class="rabm-keys" style="display: none"></span></template>
<script>
module.exports = {
    mounted() {
        this.onKey = (event) => { if (event.key === 'Escape') this.escape(); };
        document.addEventListener('keydown', this.onKey);
        this.width(window.innerWidth);
    },
    destroyed() { document.removeEventListener('keydown', this.onKey); },
}
</script>
"""


class PageKeys(v.VuetifyTemplate):
    """Escape anywhere on the page calls ``on_escape()``; ``on_width(pixels)`` gets the
    window's width once, when the page opens."""

    template = traitlets.Unicode(KEYS_TEMPLATE).tag(sync=True)
    on_escape = traitlets.Callable(None, allow_none=True)
    on_width = traitlets.Callable(None, allow_none=True)

    def vue_escape(self, _=None):
        if self.on_escape is not None:
            self.on_escape()

    def vue_width(self, pixels=None):
        if self.on_width is not None:
            self.on_width(pixels)
