"""The report: markdown tables and PNG plots made from records alone, so
the same records file always gives the same page and the same images
(medians over runs, rows and lines in a fixed order, PNGs without a
timestamp)."""

import collections
import os
import statistics
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from google.protobuf import json_format

from ferry.records_pb2 import BenchRecord

MIB = float(1 << 20)
# ferry's side of each comparison: its C++ tool against other processes,
# its binding against other in-process libraries.
FERRY_TOOLS = ("ferry-py", "ferry-cp", "ferry-walk")
CLI_PEERS = ("nfs-cp", "nfs-ls", "aws", "rclone", "cp")


def read_records_text(text: str) -> List[BenchRecord]:
    """BenchRecords from JSON lines (blank lines skipped)."""
    return [json_format.Parse(line, BenchRecord()) for line in text.splitlines() if line.strip()]


def read_records(path: str) -> List[BenchRecord]:
    with open(path) as f:
        return read_records_text(f.read())


def to_json_line(r: BenchRecord) -> str:
    return json_format.MessageToJson(r, preserving_proto_field_name=True, indent=None, sort_keys=True)


def _p(r: BenchRecord, name: str, default: str = "") -> str:
    return r.parameters.get(name, default)


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _size(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{int(n // scale)} {unit}"
    return f"{int(n)} B"


def _fmt(x: Optional[float], digits: int = 3) -> str:
    if x is None:
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _peer_of(ferry_tool: str, tool: str) -> bool:
    """Is ``tool`` compared with ``ferry_tool`` (process with process,
    library with library)?"""
    if tool in FERRY_TOOLS:
        return False
    return (tool in CLI_PEERS) == (ferry_tool != "ferry-py")


class Report:
    def __init__(self, records: Sequence[BenchRecord], image_dir: str, image_prefix: str,
                 plots: bool = True) -> None:
        self.notes = sorted({r.error for r in records if r.scenario == "note"})
        self.records = [r for r in records if r.scenario != "note"]
        self.image_dir, self.image_prefix = image_dir, image_prefix
        self.plots = plots and _matplotlib() is not None
        self.lines: List[str] = []
        self.ratios: List[Tuple[str, str, str, str, float]] = []  # target, what, ferry, peer, ratio

    # ------------------------------------------------------------ helpers
    def _ok(self, scenario: str) -> List[BenchRecord]:
        return [r for r in self.records if r.scenario == scenario and not r.errors]

    def targets(self, scenario: str) -> List[str]:
        return sorted({r.target for r in self._ok(scenario)})

    @staticmethod
    def _group(records: Iterable[BenchRecord], key: Callable[[BenchRecord], tuple],
               value: Callable[[BenchRecord], float]) -> Dict[tuple, float]:
        groups: Dict[tuple, List[float]] = collections.defaultdict(list)
        for r in records:
            groups[key(r)].append(value(r))
        return {k: statistics.median(v) for k, v in sorted(groups.items())}

    def _table(self, header: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
        self.lines.append("| " + " | ".join(header) + " |")
        self.lines.append("|" + "|".join("---" for _ in header) + "|")
        for row in rows:
            self.lines.append("| " + " | ".join(row) + " |")
        self.lines.append("")

    def _heading(self, title: str, intro: str) -> None:
        self.lines += [f"### {title}", "", intro, ""]

    def _section(self, scenario: str, title: str, intro: str) -> List[BenchRecord]:
        """The records of `scenario` without errors; when there are any, the
        section's heading and `intro` go out first."""
        recs = self._ok(scenario)
        if recs:
            self._heading(title, intro)
        return recs

    def _figure(self, name: str, lines: Dict[str, Dict[float, float]], title: str, xlabel: str,
                ylabel: str, caption: str, logx: bool = False, logy: bool = False) -> None:
        """Plots `lines` into image `name` and shows it under `caption`."""
        _plot(os.path.join(self.image_dir, name), lines, title, xlabel, ylabel, logx=logx, logy=logy)
        self._image(name, caption)

    def _image(self, name: str, title: str) -> None:
        self.lines.append(f"![{title}]({self.image_prefix}{name})")
        self.lines.append("")

    def ratio_summary(self) -> Dict[str, Dict[str, float]]:
        """Per target (after render): how many comparisons there are
        (``rows``), how many ferry loses (``rows_below_1``: ratio < 1) and
        the lowest ratio (``min_ratio``); what a quiet run must show 0 of."""
        out: Dict[str, Dict[str, float]] = {}
        for target, _what, _f, _peer, ratio in self.ratios:
            t = out.setdefault(target, {"rows": 0, "rows_below_1": 0, "min_ratio": ratio})
            t["rows"] += 1
            t["rows_below_1"] += ratio < 1
            t["min_ratio"] = round(min(t["min_ratio"], ratio), 2)
        return out

    def _ratio(self, target: str, what: str, times: Dict[str, float], lower_is_better: bool = True) -> None:
        """Ratios of every peer to each ferry tool it is compared with:
        > 1 means ferry is faster."""
        for f in FERRY_TOOLS:
            if f not in times or not times[f]:
                continue
            for peer, t in sorted(times.items()):
                if _peer_of(f, peer) and t:
                    ratio = t / times[f] if lower_is_better else times[f] / t
                    self.ratios.append((target, what, f, peer, ratio))

    # ------------------------------------------------------------ sections
    def stages(self) -> None:
        recs = self._section("stages", "Stages of one transfer",
                             "Median milliseconds per stage, from nothing to a closed file: `setup` "
                             "(client objects), `tcp_connect` (one plain TCP connect to the server, "
                             "the network's share), `session` (the tool's first round trip: its own "
                             "connect, mount or login), `first_byte`, `transfer`, `close`.")
        if not recs:
            return
        stages = ("setup", "tcp_connect", "session", "first_byte", "transfer", "close", "wall")
        groups: Dict[tuple, List[BenchRecord]] = collections.defaultdict(list)
        for r in recs:
            groups[(r.target, _num(_p(r, "size_bytes")), _p(r, "direction"), r.tool)].append(r)
        rows = []
        for (target, size, direction, tool), mine in sorted(groups.items()):
            cells = []
            for s in stages:
                v = [r.times_s[s] for r in mine if s in r.times_s]
                cells.append(_fmt(statistics.median(v) * 1e3) if v else "–")
            rows.append([target, _size(size), direction, tool, *cells])
        self._table(["target", "size", "dir", "tool", *stages], rows)
        for target in self.targets("stages"):
            for size in sorted({_num(_p(r, "size_bytes")) for r in recs if r.target == target}):
                for d in ("put", "get"):
                    times = self._group([r for r in recs if r.target == target and _p(r, "direction") == d
                                         and _num(_p(r, "size_bytes")) == size],
                                        lambda r: (r.tool,), lambda r: r.times_s["wall"])
                    self._ratio(target, f"stages {d} {_size(size)} (whole)", {k[0]: v for k, v in times.items()})

    def parallel(self) -> None:
        recs = self._section("parallel", "Many files in parallel",
                             "Every file its own transfer, `parallelism` at a time (the process tools: "
                             "that many processes at once). Median MiB/s; `best` is the parallelism "
                             "with the highest rate.")
        if not recs:
            return
        rate = self._group(recs, lambda r: (r.target, _p(r, "direction"), r.tool, _num(_p(r, "parallelism"))),
                           lambda r: r.bytes / MIB / r.times_s["wall"])
        ps = sorted({k[3] for k in rate})
        rows = []
        for (target, d, tool) in sorted({k[:3] for k in rate}):
            vals = {p: rate.get((target, d, tool, p)) for p in ps}
            best = max((v, p) for p, v in vals.items() if v is not None)
            rows.append([target, d, tool, *(_fmt(vals[p]) for p in ps), f"{int(best[1])}"])
        n = next(iter(recs))
        self.lines.append(f"{_p(n, 'files')} files of {_size(_num(_p(n, 'file_bytes')))}:")
        self.lines.append("")
        self._table(["target", "dir", "tool", *(f"p={int(p)}" for p in ps), "best"], rows)
        for target in self.targets("parallel"):
            for d in ("put", "get"):
                best = _best_per_tool((tool, v) for (t, dd, tool, p), v in rate.items()
                                      if t == target and dd == d)
                self._ratio(target, f"parallel {d}, each at its best parallelism", best, lower_is_better=False)
            if self.plots:
                name = f"{target}-parallel.png"
                lines = {}
                for (t, d, tool, p), v in rate.items():
                    if t == target:
                        lines.setdefault(f"{tool} {d}", {})[p] = v
                # Each line against its own rate at the lowest parallelism.
                speedup = {k: {p: v / pts[min(pts)] for p, v in pts.items()} for k, pts in lines.items()}
                self._figure(name, speedup, f"{target}: speedup vs parallelism",
                             "parallelism (files at once)", "speedup vs parallelism 1",
                             f"{target} speedup vs parallelism", logx=True)

    def tree(self) -> None:
        recs = self._section("tree", "Directory (tree) transfers",
                             "One command (or call) for a whole directory; median seconds.")
        if not recs:
            return
        t = self._group(recs, lambda r: (r.target, _num(_p(r, "files")), _p(r, "direction"), r.tool),
                        lambda r: r.times_s["wall"])
        self._table(["target", "files", "dir", "tool", "s", "files/s"],
                    [[k[0], str(int(k[1])), k[2], k[3], _fmt(v), _fmt(k[1] / v)] for k, v in t.items()])
        for (target, files, d) in sorted({k[:3] for k in t}):
            self._ratio(target, f"tree {d}, {int(files)} files",
                        {k[3]: v for k, v in t.items() if k[:3] == (target, files, d)})

    def sweep(self) -> None:
        recs = self._section("sweep", "Size sweep",
                             "One file per transfer; median milliseconds per file by size and `threads` "
                             "(the streams or parts in flight for one file; the tool's own option). "
                             "The plots show the same as MiB/s.")
        if not recs:
            return
        key_of = lambda r: (r.target, _p(r, "direction"), r.tool, _num(_p(r, "threads")),  # noqa: E731
                            _num(_p(r, "size_bytes")))
        rate = self._group(recs, key_of, lambda r: r.bytes / MIB / r.times_s["wall"])
        ms = self._group(recs, key_of, lambda r: r.times_s["wall"] * 1e3)
        sizes = sorted({k[4] for k in rate})
        rows = []
        for key in sorted({k[:4] for k in rate}):
            rows.append([key[0], key[1], key[2], str(int(key[3])),
                         *(_fmt(ms.get((*key, s))) for s in sizes)])
        self._table(["target", "dir", "tool", "threads", *(_size(s) for s in sizes)], rows)
        for target in self.targets("sweep"):
            for d in ("put", "get"):
                for s in (min(sizes), max(sizes)):
                    best = _best_per_tool((tool, v) for (t, dd, tool, th, sz), v in rate.items()
                                          if t == target and dd == d and sz == s)
                    self._ratio(target, f"{d} one {_size(s)} file (best threads)", best, lower_is_better=False)
            if self.plots:
                for d in ("put", "get"):
                    name = f"{target}-sweep-{d}.png"
                    lines = {}
                    for (t, dd, tool, th, sz), v in rate.items():
                        if t == target and dd == d:
                            lines.setdefault(f"{tool} t={int(th)}", {})[sz] = v
                    self._figure(name, lines, f"{target} {d}: throughput vs size",
                                 "file size (bytes)", "MiB/s", f"{target} {d} throughput vs size",
                                 logx=True, logy=True)

    def metadata(self) -> None:
        recs = self._ok("metadata")
        if not recs:
            return
        self._heading("Metadata",
                      "Operations per second (median), one at a time and "
                      f"{_p(next(r for r in recs if _p(r, 'mode') == 'parallel'), 'threads', '?') if any(_p(r, 'mode') == 'parallel' for r in recs) else '?'}"
                      " at once; `list` lists the test directory.")
        v = self._group(recs, lambda r: (r.target, r.tool, _p(r, "op"), _p(r, "mode")), lambda r: r.figures["ops_per_s"])
        ops = ("mkdir", "create", "stat", "list", "meta_add", "remove", "rmdir")
        rows = []
        for (target, tool, mode) in sorted({(k[0], k[1], k[3]) for k in v}):
            rows.append([target, tool, mode, *(_fmt(v.get((target, tool, op, mode))) for op in ops)])
        self._table(["target", "tool", "mode", *ops], rows)
        for (target, op, mode) in sorted({(k[0], k[2], k[3]) for k in v}):
            self._ratio(target, f"metadata {op} {mode} (ops/s)",
                        {k[1]: val for k, val in v.items() if (k[0], k[2], k[3]) == (target, op, mode)},
                        lower_is_better=False)

    def stress(self) -> None:
        recs = [r for r in self.records if r.scenario == "stress"]
        if not recs:
            return
        self._heading("Stress",
                      "Every client its own connections, each stat-ing one object in a loop; "
                      "ops/s and latency percentiles by number of clients, until the first error "
                      "or the time cap.")
        rows = []
        for r in sorted(recs, key=lambda r: (r.target, r.tool, _num(_p(r, "clients")))):
            rows.append([r.target, r.tool, _p(r, "clients"), _fmt(r.figures["ops_per_s"]),
                         _fmt(r.figures["p50_s"] * 1e3), _fmt(r.figures["p99_s"] * 1e3),
                         _fmt(r.figures["p999_s"] * 1e3), str(r.errors)])
        self._table(["target", "tool", "clients", "ops/s", "p50 ms", "p99 ms", "p999 ms", "errors"], rows)
        for target in sorted({r.target for r in recs}):
            best = _best_per_tool((r.tool, r.figures["ops_per_s"]) for r in recs
                                  if r.target == target and not r.errors)
            self._ratio(target, "stress: peak stat ops/s", best, lower_is_better=False)
            if self.plots:
                name = f"{target}-stress.png"
                lines = {}
                for r in recs:
                    if r.target == target:
                        for q in ("p50", "p99", "p999"):
                            lines.setdefault(f"{r.tool} {q}", {})[_num(_p(r, "clients"))] = r.figures[f"{q}_s"] * 1e3
                self._figure(name, lines, f"{target}: stat latency vs clients",
                             "concurrent clients", "latency (ms)",
                             f"{target} latency percentiles vs clients", logx=True, logy=True)

    def catalog(self) -> None:
        recs = self._section("catalog", "Catalog size",
                             "Listing the whole directory and stat-ing one entry as it grows (median "
                             "seconds; `list` in this process, `list_cli` a process of the tool; "
                             "`populate` is ferry's tree copy of the new empty files).")
        if not recs:
            return
        v = self._group(recs, lambda r: (r.target, r.tool, _p(r, "op"), _num(_p(r, "entries"))),
                        lambda r: r.figures["per_op_s"] if _p(r, "op") == "stat" else r.times_s["wall"])
        sizes = sorted({k[3] for k in v})
        rows = []
        for key in sorted({k[:3] for k in v}, key=lambda k: (k[0], k[2], k[1])):
            rows.append([key[0], key[2], key[1], *(_fmt(v.get((*key, s))) for s in sizes)])
        self._table(["target", "op", "tool", *(f"{int(s):,}" for s in sizes)], rows)
        for target in sorted({k[0] for k in v}):
            for op in ("list", "list_cli", "stat"):
                self._ratio(target, f"catalog {op} at {int(max(sizes)):,} entries",
                            {k[1]: val for k, val in v.items() if k[0] == target and k[2] == op and k[3] == max(sizes)})
            if self.plots:
                name = f"{target}-catalog.png"
                lines = {}
                for (t, tool, op, n), val in v.items():
                    if t == target and op in ("list", "list_cli"):
                        lines.setdefault(f"{tool} {op}", {})[n] = val
                self._figure(name, lines, f"{target}: listing time vs entries",
                             "entries in the directory", "seconds",
                             f"{target} listing time vs entries", logx=True, logy=True)

    def summary(self) -> None:
        if not self.ratios:
            return
        self._heading("ferry against each peer tool",
                      "Ratio > 1: ferry faster (time ratio peer/ferry, or rate ferry/peer), "
                      "ferry's C++ tool against the peers' programs, its Python binding against "
                      "the peers' libraries, medians of the same run.")
        self._table(["target", "measurement", "ferry", "peer", "ratio"],
                    [[t, what, f, p, f"{ratio:.2f}x"] for t, what, f, p, ratio in self.ratios])

    def render(self, title: Optional[str], heading_level: int = 2) -> str:
        if self.plots:
            os.makedirs(self.image_dir, exist_ok=True)
        body_start = len(self.lines)
        for section in (self.stages, self.parallel, self.tree, self.sweep, self.metadata,
                        self.stress, self.catalog):
            section()
        body = self.lines[body_start:]
        self.lines = self.lines[:body_start]
        self.summary()
        summary = self.lines[body_start:]
        errors = [r for r in self.records if r.errors]
        head: List[str] = []
        if title:
            head += [f"{'#' * heading_level} {title}", ""]
        targets = sorted({r.target for r in self.records})
        tools = sorted({r.tool for r in self.records})
        head += [f"{len(self.records)} measurements; targets: {', '.join(targets) or 'none'}; "
                 f"tools: {', '.join(tools) or 'none'}; runs per point: "
                 f"{max((r.run for r in self.records), default=0) + 1}.", ""]
        if not self.plots:
            head += ["(No plots: matplotlib is not installed.)", ""]
        tail: List[str] = []
        if errors:
            tail += ["### Errors", ""]
            seen = sorted({(r.scenario, r.target, r.tool, r.error) for r in errors})
            tail += [f"- {s} {t} {tool}: {e}" for s, t, tool, e in seen[:50]] + [""]
        if self.notes:
            tail += ["### Notes", ""] + [f"- {n}" for n in self.notes] + [""]
        text = "\n".join(head + summary + body + tail)
        if heading_level != 2:
            text = text.replace("\n### ", "\n" + "#" * (heading_level + 1) + " ")
        return text.rstrip() + "\n"


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        return None


def _best_per_tool(values: Iterable[Tuple[str, float]]) -> Dict[str, float]:
    """The highest value of each tool among (tool, value) pairs."""
    best: Dict[str, float] = {}
    for tool, v in values:
        best[tool] = max(best.get(tool, 0.0), v)
    return best


def _plot(path: str, lines: Dict[str, Dict[float, float]], title: str, xlabel: str, ylabel: str,
          logx: bool = False, logy: bool = False) -> None:
    plt = _matplotlib()
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    for label in sorted(lines):
        pts = sorted(lines[label].items())
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                linestyle="--" if not label.startswith("ferry") else "-", label=label)
    if logx:
        ax.set_xscale("log", base=2 if "parallel" in xlabel or "clients" in xlabel else 10)
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    # No Software/date metadata: the same records give the same bytes.
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)


def write_report(records: Sequence[BenchRecord], out_md: str, image_dir: str, image_prefix: str,
                 title: Optional[str] = "ferry-bench report", heading_level: int = 2) -> str:
    """Writes the markdown to ``out_md`` (and the plots to ``image_dir``);
    returns the markdown."""
    text = Report(records, image_dir, image_prefix).render(title, heading_level)
    if out_md:
        with open(out_md, "w") as f:
            f.write(text)
    return text


BEGIN_MARK = "<!-- ferry-bench:begin: generated by `scripts/bench all` from docs/bench/records.jsonl; do not edit -->"
END_MARK = "<!-- ferry-bench:end -->"


def splice(page: str, section: str) -> str:
    """``page`` with the text between the markers replaced by ``section``
    (the markers appended at the end the first time); the rest of the page
    is kept as it is."""
    block = f"{BEGIN_MARK}\n{section.rstrip()}\n{END_MARK}"
    start, end = page.find(BEGIN_MARK.split(":")[0] + ":begin"), page.find(END_MARK)
    if start < 0 or end < start:
        return page.rstrip() + "\n\n" + block + "\n"
    return page[:start] + block + page[end + len(END_MARK):]
