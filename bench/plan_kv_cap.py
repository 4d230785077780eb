"""The plan's GPU-hours of every GPU paper profile, before and after the KV-cache cap on the decode rate.

For each ``profiles/*.yaml`` without the ``cpu-`` prefix, the profile is planned as
``polyreason plan`` plans it (every trainer section checked by trl) on ``--gpu``;
printed per profile and stage: the GPU-hours range at the published batch decode
rates (``uncapped``), the range the plan states (``capped``: each generation's rate at
most the bandwidth-bound rate of the sequences its KV cache holds at once,
``components.planning.decode_bound``) and their ratio at each end. Planning reads
only settings, local files and the package's tables, so the numbers do not depend on
this machine. The last line printed is one JSON object
(``{"gpu", "profiles": {name: {"uncapped", "capped", "stages"}}}``).

    python bench/plan_kv_cap.py [--gpu H100-80GB] [--profile NAME ...] [--smoke]

``--smoke`` (CI): one profile (``qwen3-8b-pcs-grpo``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from components.config import load_profile  # noqa: E402
from components.planning import plan_profile  # noqa: E402
from components.planning.estimate import DEFAULT_GPU  # noqa: E402

SMOKE_PROFILE = "qwen3-8b-pcs-grpo"


def gpu_profiles() -> list[Path]:
    return sorted(p for p in (REPO / "profiles").glob("*.yaml") if not p.name.startswith("cpu-"))


def planned(path: Path, gpu: str) -> dict:
    """The plan's total and per-stage GPU-hours, capped and uncapped."""
    profile = load_profile(path).model_copy(update={"project_dir": str(REPO)})
    plan = plan_profile(profile, gpu).as_dict()
    stages = {name: {"uncapped": stage["gpu_hours_uncapped"], "capped": stage["gpu_hours_estimate"]}
              for name, stage in plan["stages"].items() if stage["gpu_hours_estimate"] is not None}
    return {"uncapped": plan["gpu_hours_uncapped"], "capped": plan["gpu_hours_estimate"], "stages": stages}


def span(pair: list[float] | None) -> str:
    return "-" if pair is None else f"{pair[0]:,.1f}–{pair[1]:,.1f}"


def ratio(capped: list[float] | None, uncapped: list[float] | None) -> str:
    if not capped or not uncapped or not uncapped[0] or not uncapped[1]:
        return "-"
    return f"×{capped[0] / uncapped[0]:.2f} / ×{capped[1] / uncapped[1]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default=DEFAULT_GPU)
    parser.add_argument("--profile", action="append", help="a profile name (default: every GPU profile)")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    names = [SMOKE_PROFILE] if args.smoke else args.profile
    paths = [p for p in gpu_profiles() if names is None or p.stem in names]
    results = {}
    print(f"{'profile / stage':<44} {'GPU-h before cap':>18} {'GPU-h after cap':>18}  after/before (low / high)")
    for path in paths:
        result = results[path.stem] = planned(path, args.gpu)
        print(f"{path.stem:<44} {span(result['uncapped']):>18} {span(result['capped']):>18}  "
              f"{ratio(result['capped'], result['uncapped'])}")
        for name, stage in result["stages"].items():
            print(f"  {name:<42} {span(stage['uncapped']):>18} {span(stage['capped']):>18}  "
                  f"{ratio(stage['capped'], stage['uncapped'])}")
    print(json.dumps({"gpu": args.gpu, "profiles": results}))


if __name__ == "__main__":
    from components.catalog import install

    install()  # settings check registry names against the project's registries, as on the command line
    main()
