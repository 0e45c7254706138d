"""Write the golden reference from the current code, or check the stored one.

    python tests/golden/generate.py            run every case; rewrite golden.json and reference/
    python tests/golden/generate.py --check    only check that reference/ hashes to golden.json

Regenerate only for a change that alters results, on a machine where the current
reference passes bit for bit (``tests/test_golden.py`` reports "bitwise" for every case);
record old vs new figures in CHANGELOG.md and bump ``RESULTS_SCHEMA``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import (  # noqa: E402
    CASES,
    ENV_CASES,
    GOLDEN_FILE,
    REFERENCE,
    case_id,
    dumps,
    env_key,
    fingerprint,
    load_golden,
    read_reference,
    reference_paths,
    run_case,
    run_env,
    write_reference,
)

STUDIES = Path(__file__).resolve().parents[2] / "studies"


def study_run_ids() -> dict[str, dict[str, object]]:
    """Per shipped study file: its number of runs and a digest of its run ids in order."""
    from lab.study.spec import Study

    out: dict[str, dict[str, object]] = {}
    for path in sorted(STUDIES.glob("*.toml")):
        ids = [r.run_id for r in Study.from_toml(path).runs()]
        digest = hashlib.sha256(" ".join(ids).encode()).hexdigest()
        out[path.name] = {"runs": len(ids), "first": ids[0], "ids_sha256": digest}
    return out


def check() -> list[str]:
    """Problems with the stored reference: a missing file or one that does not hash to its
    fingerprint in golden.json."""
    golden = load_golden()
    problems = []
    for key, record in golden.items():
        if key == "run_ids":
            continue
        try:
            tables = read_reference(key)
        except FileNotFoundError as exc:
            problems.append(f"{key}: reference file missing ({exc.filename})")
            continue
        for name, df in tables.items():
            if fingerprint(df) != record[name]:
                problems.append(f"{key}: reference {name} does not hash to golden.json")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the stored reference")
    args = parser.parse_args()
    if args.check:
        problems = check()
        print("\n".join(problems) or "reference/ hashes to golden.json")
        sys.exit(1 if problems else 0)
    out: dict[str, object] = {}
    for i, case in enumerate(CASES):
        key = case_id(case)
        summary, tables = run_case(case)
        out[key] = {"summary": summary, **write_reference(key, tables)}
        print(f"[{i + 1}/{len(CASES)}] {key}", flush=True)
    for name, kwargs in ENV_CASES.items():
        out[env_key(name)] = write_reference(env_key(name), {"trace": run_env(kwargs)})
        print(f"PopulationEnv trace {name}", flush=True)
    out["run_ids"] = study_run_ids()
    for stale in set(REFERENCE.glob("*")) - _expected_files(out):
        stale.unlink()
    GOLDEN_FILE.write_text(dumps(out))
    problems = check()
    if problems:
        raise SystemExit("\n".join(problems))
    print(f"wrote {GOLDEN_FILE.name} and {len(list(REFERENCE.glob('*')))} reference tables")


def _expected_files(golden: dict[str, object]) -> set[Path]:
    files: set[Path] = set()
    for key in golden:
        if key != "run_ids":
            files.update(reference_paths(key).values())
    return files


if __name__ == "__main__":
    main()
