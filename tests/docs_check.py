#!/usr/bin/env python3
"""docs-check, the rules about what the README claims (tests/docs-check.sh
runs this after its own path rules). Each failure is one line
"docs-check: FILE:LINE: WHY"; exit 1 on any.

  1. README.md up to its "## Set up" heading is at most 40 lines, and no
     sentence there (prose, a list item, a table row) is over 40 words.
  2. Its feature table (header "| feature | state | proven by |"): the state
     is works, lab-only or planned (", check-full" and ", by hand" may
     follow); a works or lab-only row not done by hand names a test; each
     test named exists and runs in `make check`, or in `make check-full`
     when the row says check-full. "Runs" is read from tests/check.sh's own
     plan (FXBLK_CHECK_LIST=1), not from a list kept here:
       tests/lab/tests/NN-name.sh  a "RUN lab KERNEL: NN-name" line
       tests/*.sh (host)           a RUN line whose command runs it
       ctl/**/test_*.cpp, *.py     a ctest entry (CMakeLists.txt) of the unit
                                   tree, and "unit ctl" is a RUN line
  3. A figure in README.md (a number with a unit: min, s, MB, passed, x ...)
     stands in a paragraph that links a doc under docs/, and that doc has
     the same figure: figures are owned by the docs, the README links there.
  4. Every relative link in README.md and docs/**/*.md names a file or
     directory of the repository, and its #anchor a heading of that file.
  5. The paths of the docs as they were on 2026-12-06 still resolve (a moved
     doc leaves a stub behind), so links from outside keep working.
  6. docs/module-parameters.md's table names exactly the parameters the
     module's sources declare (module_param, _named, _cb in kmod/*.c).

Environment: FXBLK_DOCS_ROOT=DIR checks the README and docs of DIR (the
self-test's planted copies) against the plan of this tree's tests/check.sh;
FXBLK_DOCS_PLAN=FILE and FXBLK_DOCS_PLAN_FULL=FILE give that plan as saved
output of FXBLK_CHECK_LIST=1 (and FXBLK_CHECK_FULL=1) instead of running it.
"""
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
ROOT = os.environ.get("FXBLK_DOCS_ROOT", TOP)
MAX_LINES = 40
MAX_WORDS = 40
STATES = ("works", "lab-only", "planned")
OLD_DOCS = ("docs/admin-guide.md", "docs/architecture.md", "docs/benchmarks.md",
            "docs/gpu-direct.md", "docs/install.md", "docs/netlink-api.md",
            "docs/on-disk-format.md", "docs/reliability.md",
            "docs/support-matrix.md", "docs/bench")

bad = 0


def report(where, why):
    global bad
    print(f"docs-check: {where}: {why}")
    bad = 1


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read().split("\n")


def strip_code_fences(lines):
    """(lineno, text) of the lines outside ``` fences"""
    out, fence = [], False
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            out.append((n, line))
    return out


# ---- 1. one screen up to "Set up" -------------------------------------------
def sentences(lines):
    """(lineno, text) per sentence: a table row, a heading or a list item
    starts its own; prose sentences end at . ! ? before a space or the end"""
    units, cur, start = [], [], 0

    def flush():
        nonlocal cur
        if cur:
            text = " ".join(cur)
            for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`(\[*])", text):
                units.append((start, s))
        cur = []

    for n, line in strip_code_fences(lines):
        t = line.strip()
        if not t:
            flush()
        elif t.startswith("|"):
            flush()
            if not re.fullmatch(r"[|:\- ]+", t):
                units.append((n, t))
        elif t.startswith("#") or re.match(r"([-*+]|\d+\.) ", t):
            flush()
            if t.startswith("#"):
                units.append((n, t))
            else:
                start, cur = n, [t]
        else:
            if not cur:
                start = n
            cur.append(t)
    flush()
    return units


def words(text):
    text = re.sub(r"\]\([^)]*\)", "]", text)    # a link's target is no word
    return [w for w in re.split(r"[\s|]+", text) if re.search(r"\w", w)]


def check_top(lines):
    end = next((i for i, l in enumerate(lines) if l.startswith("## Set up")), None)
    if end is None:
        report("README.md", "no '## Set up' heading: the one-screen part has no end")
        return []
    if end > MAX_LINES:
        report(f"README.md:{end + 1}", f"{end} lines before '## Set up', more than {MAX_LINES}")
    top = lines[:end]
    for n, s in sentences(top):
        if len(words(s)) > MAX_WORDS:
            report(f"README.md:{n}", f"a sentence of {len(words(s))} words, more than {MAX_WORDS}: '{s[:60]}...'")
    return top


# ---- 2. the feature table against tests/check.sh's plan ---------------------
def plan(full):
    saved = os.environ.get("FXBLK_DOCS_PLAN_FULL" if full else "FXBLK_DOCS_PLAN")
    if saved:
        with open(saved, encoding="utf-8") as f:
            stdout, rc = f.read(), 0
    else:
        stdout, rc = run_plan(full)
    runs = []
    for line in stdout.split("\n"):
        f = line.split("\t")
        if f[0] == "RUN" and len(f) >= 3:
            runs.append((f[1], f[2]))
    if rc != 0 or not runs:
        report("tests/check.sh", f"FXBLK_CHECK_LIST=1 gave no plan (exit {rc})")
    return runs


def run_plan(full):
    env = {k: v for k, v in os.environ.items()
           if k not in ("FXBLK_CHECK_FILTER", "FXBLK_LAB_KERNELS", "FXBLK_LAB_EXTRA_DIR",
                        "FXBLK_CHECK_FULL")}
    env["FXBLK_CHECK_LIST"] = "1"
    if full:
        env["FXBLK_CHECK_FULL"] = "1"
    out = subprocess.run(["bash", os.path.join(TOP, "tests/check.sh")], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return out.stdout, out.returncode


def ctest_registered(rel):
    """a ctl test file that a CMakeLists.txt of the unit tree makes a ctest
    entry of: named there, in a foreach(name ...) list, or (a pytest file)
    in a directory an add_test(... pytest ...) runs"""
    d, base = os.path.split(rel)
    stem = os.path.splitext(base)[0]
    for cm in (os.path.join(d, "CMakeLists.txt"), os.path.join(os.path.dirname(d), "CMakeLists.txt")):
        p = os.path.join(TOP, cm)
        if not os.path.isfile(p):
            continue
        with open(p, encoding="utf-8") as f:
            text = f.read()
        if base in text and "add_test" in text:
            return True
        for m in re.finditer(r"foreach\(name ([^)]*)\)", text):
            if stem.startswith("test_") and stem[5:] in m.group(1).split() and "add_test" in text:
                return True
        if rel.endswith(".py") and re.search(r"add_test\([^)]*-m pytest[^)]*/" + re.escape(os.path.basename(d)), text, re.S):
            return True
    return False


def runs_test(runs, rel):
    m = re.fullmatch(r"tests/lab/tests/(.*)\.sh", rel)
    if m:
        return any(re.fullmatch(r"lab [^:]+: " + re.escape(m.group(1)), name) for name, _ in runs)
    if rel.startswith("ctl/"):
        return ctest_registered(rel) and any(name == "unit ctl" for name, _ in runs)
    return any(re.search(r"(^|[ /])" + re.escape(rel) + r"( |$)", cmd) for _, cmd in runs)


def is_test(rel):
    return (rel.startswith("tests/") and rel.endswith(".sh")) or \
        re.search(r"(^|/)test_[^/]*\.(cpp|py)$", rel) is not None


def check_table(top):
    rows = []
    head = None
    for n, line in enumerate(top, 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if head is None:
            if [c.lower() for c in cells[:3]] == ["feature", "state", "proven by"]:
                head = n
            continue
        if not line.startswith("|"):
            break
        if re.fullmatch(r"[|:\- ]+", line.strip()):
            continue
        rows.append((n, cells))
    if head is None:
        report("README.md", "no feature table ('| feature | state | proven by |') before '## Set up'")
        return
    runs = {False: None, True: None}
    for n, cells in rows:
        if len(cells) < 3:
            report(f"README.md:{n}", "a feature row without its three cells")
            continue
        feature, state, proof = cells[:3]
        words_ = [w.strip() for w in state.split(",")]
        if words_[0] not in STATES or any(w not in ("check-full", "by hand") for w in words_[1:]):
            report(f"README.md:{n}", f"state '{state}': not works, lab-only or planned (', check-full', ', by hand')")
            continue
        full = "check-full" in words_[1:]
        targets = re.findall(r"\]\(([^)#\s]+)[^)]*\)", proof) + re.findall(r"`([^`\s]+/[^`\s]+)`", proof)
        tests = [t for t in targets if is_test(t)]
        if words_[0] != "planned" and "by hand" not in words_ and not tests:
            report(f"README.md:{n}", f"'{feature}' is claimed ({state}) but names no test")
        for t in tests:
            if not os.path.isfile(os.path.join(TOP, t)):
                report(f"README.md:{n}", f"'{feature}': {t} does not exist")
                continue
            if runs[full] is None:
                runs[full] = plan(full)
            if not runs_test(runs[full], t):
                where = "make check-full" if full else "make check (a test of check-full only: say 'check-full' in its state)"
                report(f"README.md:{n}", f"'{feature}': {t} is not run by {where}")


# ---- 3. figures live in the docs that own them ------------------------------
FIGURE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?:[ -](?:min|minutes?|s|ms|h|hours?|MB|GB|MiB|GiB|KiB)"
                    r"|(?:MB|GB|MiB|GiB|KiB|%|×|x)| (?:passed|failed|skipped))(?![\w])")


def check_figures(lines):
    paras, cur = [], []
    for n, line in enumerate(lines, 1):
        if line.strip() == "" or line.lstrip().startswith("```") or line.startswith("#"):
            if cur:
                paras.append(cur)
            cur = []
            if line.startswith("#"):
                paras.append([(n, line)])
        else:
            cur.append((n, line))
    if cur:
        paras.append(cur)
    for para in paras:
        text = " ".join(t for _, t in para)
        owners = [re.sub(r"#.*", "", t) for t in re.findall(r"\]\((docs/[^)\s]+\.md[^)\s]*)\)", text)]
        for n, line in para:
            for m in FIGURE.finditer(line):
                fig = m.group(0)
                if not owners:
                    report(f"README.md:{n}", f"figure '{fig}' with no link to the doc that owns it")
                    continue
                found = False
                for o in owners:
                    p = os.path.join(ROOT, o)
                    if os.path.isfile(p):
                        with open(p, encoding="utf-8") as f:
                            if re.search(r"(?<![\w.])" + re.escape(fig) + r"(?![\w])", f.read()):
                                found = True
                if not found:
                    report(f"README.md:{n}", f"figure '{fig}' is not in {', '.join(sorted(set(owners)))}: it differs from the doc that owns it")


# ---- 4. relative links and anchors ------------------------------------------
def slug(heading):
    """GitHub's anchor of a Markdown heading"""
    h = re.sub(r"`", "", heading.strip().lower())
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


anchor_cache = {}


def anchors(rel):
    if rel not in anchor_cache:
        seen, out = {}, set()
        for _, line in strip_code_fences(read(rel)):
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                k = seen.get(s, 0)
                seen[s] = k + 1
                out.add(s if k == 0 else f"{s}-{k}")
            for a in re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line):
                out.add(a)
        anchor_cache[rel] = out
    return anchor_cache[rel]


def check_links(rel):
    d = os.path.dirname(rel)
    for n, line in strip_code_fences(read(rel)):
        line = re.sub(r"`[^`]*`", "", line)
        for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(d, path)) if path else rel
            if dest.startswith(".."):
                continue    # tests/docs-check.sh reports those
            if not os.path.exists(os.path.join(ROOT, dest)):
                report(f"{rel}:{n}", f"link '{target}': {dest} does not exist")
                continue
            if frag and dest.endswith(".md") and frag not in anchors(dest):
                report(f"{rel}:{n}", f"link '{target}': no heading #{frag} in {dest}")


PARAM_RE = re.compile(r"\bmodule_param(?:_named|_cb)?\(\s*(\w+)\s*,")
PARAM_DOC = "docs/module-parameters.md"


def check_params():
    declared = {}
    kmod = os.path.join(ROOT, "kmod")
    for name in sorted(os.listdir(kmod)):
        if name.endswith(".c"):
            for n, line in enumerate(read(f"kmod/{name}"), 1):
                m = PARAM_RE.search(line)
                if m:
                    declared.setdefault(m.group(1), f"kmod/{name}:{n}")
    if not os.path.exists(os.path.join(ROOT, PARAM_DOC)):
        report(PARAM_DOC, "missing: the module parameters' reference")
        return
    documented = {}
    for n, line in enumerate(read(PARAM_DOC), 1):
        m = re.match(r"\|\s*`(\w+)`\s*\|", line)
        if m:
            documented.setdefault(m.group(1), n)
    for name, where in sorted(declared.items()):
        if name not in documented:
            report(where, f"module parameter '{name}' is not in {PARAM_DOC}")
    for name, n in sorted(documented.items()):
        if name not in declared:
            report(f"{PARAM_DOC}:{n}", f"'{name}' is no parameter of the module (kmod/*.c)")


def main():
    lines = read("README.md")
    top = check_top(lines)
    if top:
        check_table(top)
    check_figures(lines)
    docs = ["README.md"]
    for dirpath, _, files in os.walk(os.path.join(ROOT, "docs")):
        docs += sorted(os.path.relpath(os.path.join(dirpath, f), ROOT) for f in files if f.endswith(".md"))
    for rel in docs:
        check_links(rel)
    check_params()
    for old in OLD_DOCS:
        if not os.path.exists(os.path.join(ROOT, old)):
            report(old, "an old doc path no longer resolves: leave a stub that links to where it went")
    if not bad:
        print(f"docs-check: README within {MAX_LINES} lines and {MAX_WORDS} words a sentence, "
              f"its tests run, its figures in their docs; {len(docs)} docs' links resolve; "
              f"the module parameters' reference complete")
    return bad


if __name__ == "__main__":
    sys.exit(main())
