"""Print SOURCES.md's two generated tables (cases; files) from sources.json and the truth files.

Run: python tests/realworld/tools/sources_tables.py   (standard library only)
"""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def size(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file() and not f.name.startswith("truth."))


def main():
    manifest = json.loads((HERE / "sources.json").read_text())
    print("| case | harness | kind | recorded settings that differ (truth) | raw files | bytes |")
    print("|---|---|---|---|---|---|")
    for case in sorted((HERE / "cases").iterdir()):
        t = json.loads((case / "truth.json").read_text())
        h = t.get("harness") or f"A: {t.get('harness_a')}; B: {t.get('harness_b')}"
        if t["kind"] == "series":
            what = f"series over {t['step_key']}: steps {t['steps']}"
        elif t["kind"] == "refusal":
            what = f"refused in one line naming {t['tool']}"
        else:
            d = list(t.get("differs", []))
            per = {}
            for task, lst in (t.get("differs_by_task") or {}).items():
                for p in lst:
                    per.setdefault(p, []).append(task)
            d += [f"{p} ({tasks[0]})" if len(tasks) == 1 else f"{p} ({len(tasks)} tasks)" for p, tasks in per.items()]
            what = ", ".join(d) if d else "none"
            if t.get("per_doc"):
                what += "; per-doc on both sides"
            if t.get("filtered"):
                what += "; scored-answer comparison"
        n = sum(1 for m in manifest if m["case"] == case.name)
        print(f"| `{case.name}` | {h} | {t['kind']} | {what} | {n} | {size(case)} |")
    print()
    print("| file (under cases/) | repository | path in the repository | commit | blob | bytes (original → kept) | trimmed |")
    print("|---|---|---|---|---|---|---|")
    for m in manifest:
        f = m["file"][len("cases/"):]
        kept = f"{m['bytes_original']}" if m["bytes"] == m["bytes_original"] else f"{m['bytes_original']} → {m['bytes']}"
        print(f"| `{f}` | {m['repo']} | `{m['path']}` | `{m['commit']}` | `{m['blob'][:12]}` | {kept} | "
              f"{m['trimmed'] or 'whole'} |")


if __name__ == "__main__":
    main()
