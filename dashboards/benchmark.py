"""Time one dashboard step (model step + render of every view) with Solara's test tooling.

    python dashboards/benchmark.py [--n-initial 1000] [--steps 30]

Renders the page in-process (no browser), sets N₀ through the sidebar slider, then clicks
Mesa's Step button and times each click: the model tick, the Vega-Lite specs, the table
and Solara's render passes. Browser drawing time comes on top (Vega redraws six charts).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-initial", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import ipyvuetify as v
    import solara

    from dashboards import app

    _, rc = solara.render(solara.AppLayout(children=[app.Page()]), handle_error=False)
    slider = [w for w in rc.find(v.Slider).widgets if "N₀" in str(w.label)][0]
    slider.v_model = args.n_initial
    times = []
    for _ in range(args.steps):
        button = rc.find(v.Btn, children=["Step"]).widget
        t0 = time.perf_counter()
        button.click()
        times.append(1000 * (time.perf_counter() - t0))
    ms = sorted(times)
    print(f"N0={args.n_initial}: step + render over {args.steps} steps: median {statistics.median(ms):.0f} ms, "
          f"p90 {ms[int(0.9 * (len(ms) - 1))]:.0f} ms, first {times[0]:.0f} ms, max {ms[-1]:.0f} ms")  # fmt: skip
    rc.close()


if __name__ == "__main__":
    main()
