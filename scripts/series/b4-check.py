#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The exported series as a maintainer takes it from the list, with b4.

  b4-check.py EXPORT_DIR [TOPIC...]

EXPORT_DIR is what `make series` wrote (scripts/series/series.sh export):
per topic, EXPORT_DIR/<topic>.mbox (the thread as a list archive serves
it) and EXPORT_DIR/<topic>/ (the files the sender mailed). Default: every
topic of kernel-patches/topics. For each topic, in apply order:

 1. the mbox is one thread: the cover letter and as many patches as the
    topic has commits in the prepared tree, each patch In-Reply-To and
    References the cover's Message-ID, no Message-ID twice;
 2. `b4 am` (the pinned b4 of scripts/lib/env.sh, B4) on the local mbox
    and the cover's Message-ID -- offline (--offline-mode: no lookup of
    follow-ups, newer versions or CI), no cache, with no configuration of
    this machine's user (HOME and git's global config set aside), in a
    scratch tree at the topic's base as a maintainer runs it in theirs --
    exits 0, writes the cover and every patch, and prints no warning. A
    warning is any line of b4's output that is not one of the lines b4
    0.16 prints for a complete, unsigned series that applies to the tree
    it runs in (WHITELIST below: "Analyzing N messages", the patch lines
    "  [PATCH ...] subject" with no mark, "Total patches: N", "Cover:",
    "Link:", "Base: applies clean to current tree", "git am ...").
    b4's own "WARNING: Thread incomplete!", "ERROR: missing [n/m]!",
    "NOTE: ...", "No patches found.", "Base: base-commit ... not known",
    its "git checkout -b <base>" hint (the series does not apply to the
    tree it was run in) and attestation marks are all such lines; so is
    anything a later b4 prints that this one did not;
 3. b4's cover letter is the one sent (subject, author, text);
 4. `git am` applies b4's mbox to the topic's base in the scratch tree:
    the pristine tree plus the topics it depends on -- the prepared tree's
    tag rust-mm/<t> when those are the first topics of the stack (the
    topics before it, or a prefix of them), else b4's own mboxes of those
    topics applied in order on the longest such prefix;
 5. each commit is the patch that was sent: its tree is the base plus the
    sent patches up to it (git apply --cached on a scratch index), its
    message is what `git am` takes from the sent patch (git mailinfo), and
    its author and date are the sent patch's;
 6. the result is the prepared tree's rust-mm/<t> bit for bit when the
    topic depends on exactly the topics before it; otherwise (it was
    exported on the pristine tree plus its dependencies only) it is that
    base plus every patch sent, and the line says so.

One line per check, "b4: <topic>: <what>: ok" or "...: FAILED <why>"
(indented lines after a failure show what b4 or git said); a check that
cannot run because an earlier one failed is FAILED too (so every topic
always has 6 lines); the first line checks b4 itself; the last line is
"b4: N passed, N failed". Exit status 1 when anything failed.

The scratch tree is a git worktree of the prepared tree, BUILD_DIR/
b4-check-tree, kept between runs (making it checks out the whole kernel
tree once); its outputs and logs go to BUILD_DIR/b4-check/<topic>/
(B4_CHECK_OUT=dir elsewhere: tests/tools/test_b4.py).
"""
import email
import email.parser
import email.policy
import email.utils
import os
import re
import shutil
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts", "lib"))
import topics as topicsmod  # noqa: E402

NCHECKS = 6

# An mbox separator as git and liblore (b4) recognise it: "From <x> <date
# with a time and a year>"; a body line "From then on" is not one.
FROM_LINE = re.compile(rb"^From \S+.*\d\d:\d\d:\d\d.*\d{4}")
GT_FROM = re.compile(rb"^>+From ")


def env_sh(*names):
    """Values from scripts/lib/env.sh (the one place they are set)."""
    out = subprocess.run(
        ["bash", "-c", '. "$0/scripts/lib/env.sh" && printf "%s\\n" ' +
         " ".join(f'"${n}"' for n in names), TOP],
        capture_output=True, text=True, check=True).stdout.split("\n")
    return dict(zip(names, out))


ENV = env_sh("BUILD_DIR", "KSRC", "B4")
BUILD_DIR, KSRC, B4 = ENV["BUILD_DIR"], ENV["KSRC"], ENV["B4"]
B4_VERSION = re.sub(r".*/b4-([^/]+)/.*", r"\1", B4)
TREE = os.path.join(BUILD_DIR, "b4-check-tree")
WORK = os.environ.get("B4_CHECK_OUT") or os.path.join(BUILD_DIR, "b4-check")
# Nothing of this machine's user: no b4 or git settings, no b4 cache.
HOME = os.path.join(WORK, "home")
ISOLATED = dict(os.environ, HOME=HOME, XDG_CONFIG_HOME=os.path.join(HOME, ".config"),
                XDG_CACHE_HOME=os.path.join(HOME, ".cache"),
                XDG_DATA_HOME=os.path.join(HOME, ".local", "share"),
                GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
                GIT_COMMITTER_NAME="b4-check", GIT_COMMITTER_EMAIL="b4-check@localhost",
                LC_ALL="C.UTF-8")
for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE",
          "GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE"):
    ISOLATED.pop(k, None)


def git(cwd, *args, env=None, input=None, check=True):
    r = subprocess.run(["git", "-C", cwd, *args], capture_output=True,
                       env=env or ISOLATED, input=input)
    if check and r.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout.decode(errors="replace")


class GitError(Exception):
    pass


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def line(self, topic, what, why=None, detail=()):
        head = f"b4: {topic}: {what}" if topic else f"b4: {what}"
        if why is None:
            self.passed += 1
            print(f"{head}: ok")
        else:
            self.failed += 1
            print(f"{head}: FAILED {why}")
            for d in list(detail)[:40]:
                print(f"    {d}")
        sys.stdout.flush()
        return why is None


def split_mbox(data):
    """Messages of an mboxrd (or git format-patch) mbox: strict separators,
    one '>' taken off '>From ' body lines."""
    msgs, cur, in_hdr = [], None, False
    for line in data.split(b"\n"):
        if FROM_LINE.match(line):
            if cur is not None:
                msgs.append(cur)
            cur, in_hdr = [], True
            continue
        if cur is None:
            continue
        if in_hdr and line == b"":
            in_hdr = False
        elif not in_hdr and GT_FROM.match(line):
            line = line[1:]
        cur.append(line)
    if cur is not None:
        msgs.append(cur)
    parser = email.parser.BytesParser(policy=email.policy.default)
    return [parser.parsebytes(b"\n".join(m)) for m in msgs]


def msgid(value):
    m = re.search(r"<([^<>\s]+)>", str(value or ""))
    return m.group(1) if m else None


def unfold(s):
    return re.sub(r"\s*\n\s*", " ", str(s or "")).strip()


def strip_prefix(subject):
    return re.sub(r"^\s*\[[^\]]*\]\s*", "", unfold(subject))


def stripspace(text):
    """git stripspace: no trailing blanks, no leading/trailing/double empty lines."""
    lines = [ln.rstrip() for ln in text.split("\n")]
    out = []
    for ln in lines:
        if ln == "" and (not out or out[-1] == ""):
            continue
        out.append(ln)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)


def first_diff(a, b, what):
    al, bl = a.split("\n"), b.split("\n")
    for i in range(max(len(al), len(bl))):
        x = al[i] if i < len(al) else "<none>"
        y = bl[i] if i < len(bl) else "<none>"
        if x != y:
            return f"{what} line {i + 1}: sent {x!r}, got {y!r}"
    return f"{what} differs"


# Every line b4 0.16's `am` prints for a complete, unsigned series that
# applies to the tree it runs in (--offline-mode, an --outdir). Anything
# else is a warning.
WHITELIST = [
    ("offline", re.compile(r"^Running in OFFLINE mode$")),
    ("analyzing", re.compile(r"^Analyzing (\d+) messages in the thread$")),
    ("attestation", re.compile(r"^Checking attestation on all messages, may take a moment\.\.\.$")),
    ("sep", re.compile(r"^\s*---$")),
    ("patch", re.compile(r"^  \[([^\]]*?)(\d+)/(\d+)\] (.*)$")),
    ("total", re.compile(r"^Total patches: (\d+)$")),
    ("cover", re.compile(r"^Cover: (.+)$")),
    ("link", re.compile(r"^ Link: \S+$")),
    ("base", re.compile(r"^ Base: applies clean to current tree$")),
    ("gitam", re.compile(r"^       git am (.+)$")),
]


def classify(line):
    for name, rx in WHITELIST:
        m = rx.match(line)
        if m:
            return name, m
    return None, None


def ensure_tree():
    """The scratch worktree of the prepared tree (made once, then reused)."""
    common = os.path.realpath(os.path.join(KSRC, ".git"))
    try:
        got = git(TREE, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
        if os.path.realpath(got) == common:
            git(TREE, "am", "--abort", check=False)
            return
    except (GitError, FileNotFoundError, NotADirectoryError):
        pass
    git(KSRC, "worktree", "remove", "--force", TREE, check=False)
    shutil.rmtree(TREE, ignore_errors=True)
    git(KSRC, "worktree", "prune")
    git(KSRC, "worktree", "add", "-q", "--detach", TREE, "pristine")


def checkout(rev):
    git(TREE, "am", "--abort", check=False)
    git(TREE, "checkout", "-q", "-f", "--detach", rev)
    git(TREE, "clean", "-q", "-f", "-d", "-x")
    return git(TREE, "rev-parse", "HEAD").strip()


def deps_closure(t, info):
    want, todo = set(), list(info[t]["Depends"])
    while todo:
        d = todo.pop()
        if d not in want:
            want.add(d)
            todo.extend(info[d]["Depends"])
    return [x for x in info if x in want]


def check_b4_itself(res):
    what = f"b4 {B4_VERSION} (PyPI, pinned in scripts/lib/env.sh) at {B4}"
    if not os.access(B4, os.X_OK):
        return res.line(None, what, "not installed (run: make setup)")
    r = subprocess.run([B4, "--version"], capture_output=True, text=True, env=ISOLATED)
    if r.returncode != 0 or r.stdout.strip() != B4_VERSION:
        return res.line(None, what, f"'b4 --version' says {r.stdout.strip() or r.stderr.strip()!r}")
    return res.line(None, what)


class Topic:
    def __init__(self, name, export, order, info):
        self.t = name
        self.export = export
        self.dir = os.path.join(export, name)
        self.mbox = os.path.join(export, name + ".mbox")
        self.out = os.path.join(WORK, name)
        idx = order.index(name)
        self.before = order[:idx]
        self.deps = deps_closure(name, info)
        prev = f"rust-mm/{order[idx - 1]}" if idx else "pristine"
        self.n = int(git(KSRC, "rev-list", "--count", f"{prev}..rust-mm/{name}").strip())
        self.b4_mbx = None  # b4's output, for the topics that need this one

    # 1
    def check_thread(self, res):
        what = f"the mbox is one thread, a cover letter and {self.n} patches each In-Reply-To and References it"
        if not os.path.isfile(self.mbox):
            return res.line(self.t, what, f"{self.mbox} is missing (make series writes it)")
        with open(self.mbox, "rb") as f:
            msgs = split_mbox(f.read())
        problems = []
        if len(msgs) != self.n + 1:
            problems.append(f"{len(msgs)} messages, not {self.n + 1}")
        ids = [msgid(m["Message-ID"]) for m in msgs]
        if not msgs or ids[0] is None:
            problems.append("the cover letter has no Message-ID")
        cover = ids[0] if ids else None
        seen = set()
        for k, (m, i) in enumerate(zip(msgs, ids)):
            subj = unfold(m["Subject"])
            num = re.search(r"\[[^\]]*?(\d+)/(\d+)\]", subj)
            if not num or (int(num.group(1)), int(num.group(2))) != (k, self.n):
                problems.append(f"message {k + 1} is not [.. {k}/{self.n}]: {subj!r}")
            if i is None:
                problems.append(f"message {k + 1} has no Message-ID")
            elif i in seen:
                problems.append(f"message {k + 1}: Message-ID <{i}> given twice")
            seen.add(i)
            if k == 0:
                continue
            if cover and msgid(m["In-Reply-To"]) != cover:
                problems.append(f"message {k + 1} is not In-Reply-To the cover letter")
            if cover and cover not in re.findall(r"<([^<>\s]+)>", str(m["References"] or "")):
                problems.append(f"message {k + 1} does not have the cover letter in References")
        self.cover_id = cover
        self.sent = msgs
        if problems:
            return res.line(self.t, what, problems[0], problems[1:])
        return res.line(self.t, what)

    # 2
    def run_b4(self, res):
        what = f"b4 am reconstructs the cover letter and {self.n}/{self.n} patches with no warning"
        os.makedirs(self.out, exist_ok=True)
        if not os.path.isfile(self.mbox):
            return res.line(self.t, what, "not run: no mbox")
        outdir = os.path.join(self.out, "b4")
        shutil.rmtree(outdir, ignore_errors=True)
        cmd = [B4, "--offline-mode", "--no-interactive", "am", "--no-cache",
               "--use-local-mbox", self.mbox, "--outdir", outdir, "--mbox-name", f"{self.t}.mbx"]
        # The cover's Message-ID, as a maintainer names the thread; without
        # one b4 is given none (and takes the first message's, if any).
        if getattr(self, "cover_id", None):
            cmd.append(self.cover_id)
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=TREE, env=ISOLATED)
        log = r.stdout + r.stderr
        with open(os.path.join(self.out, "b4.log"), "w") as f:
            f.write("$ " + " ".join(cmd) + "\n" + log)
        lines = [ln for ln in r.stderr.split("\n") if ln.strip()]
        warnings = [ln for ln in lines if classify(ln)[0] is None]
        warnings += [f"(on stdout) {ln}" for ln in r.stdout.split("\n") if ln.strip()]
        got = {}
        patches = []
        for ln in lines:
            name, m = classify(ln)
            if name == "patch":
                patches.append((int(m.group(2)), int(m.group(3)), m.group(4)))
            elif name:
                got[name] = m
        problems = []
        if r.returncode != 0:
            problems.append(f"b4 exited {r.returncode}")
        mbx = os.path.join(outdir, f"{self.t}.mbx")
        cover = os.path.join(outdir, f"{self.t}.cover")
        if not os.path.isfile(mbx):
            problems.append("b4 wrote no mbox (it gave nothing)")
        if not os.path.isfile(cover) or "cover" not in got:
            problems.append("b4 wrote no cover letter")
        if "analyzing" in got and int(got["analyzing"].group(1)) != self.n + 1:
            problems.append(f"b4 analyzed {got['analyzing'].group(1)} messages, not {self.n + 1}")
        if "total" not in got or int(got["total"].group(1)) != self.n:
            problems.append(f"b4's total is {got['total'].group(1) if 'total' in got else 'missing'}, not {self.n}")
        if [(a, b) for a, b, _ in patches] != [(k, self.n) for k in range(1, self.n + 1)]:
            problems.append(f"b4 listed patches {', '.join(f'{a}/{b}' for a, b, _ in patches) or 'none'}")
        else:
            sent = [strip_prefix(m["Subject"]) for m in getattr(self, "sent", [])[1:]]
            if len(sent) == self.n and [s for _, _, s in patches] != sent:
                problems.append("b4's subjects are not the ones sent")
        if os.path.isfile(mbx):
            with open(mbx, "rb") as f:
                n = len([1 for ln in f.read().split(b"\n") if FROM_LINE.match(ln)])
            if n != self.n:
                problems.append(f"b4's mbox has {n} patches, not {self.n}")
        if warnings:
            problems.append(f"{len(warnings)} warning line(s) from b4")
        if problems:
            return res.line(self.t, what, "; ".join(problems),
                            [f"b4: {w}" for w in warnings] or log.strip().split("\n")[-10:])
        self.b4_mbx, self.b4_cover = mbx, cover
        return res.line(self.t, what)

    # 3
    def check_cover(self, res):
        what = "b4's cover letter is the one sent (subject, author, text)"
        if not self.b4_mbx:
            return res.line(self.t, what, "not run: b4 am did not pass")
        with open(self.b4_cover, "rb") as f:
            got = email.parser.BytesParser(policy=email.policy.default).parse(f)
        sent = self.sent[0]
        problems = []
        if strip_prefix(got["Subject"]) != strip_prefix(sent["Subject"]):
            problems.append(f"subject {strip_prefix(got['Subject'])!r}, sent {strip_prefix(sent['Subject'])!r}")
        if email.utils.parseaddr(str(got["From"])) != email.utils.parseaddr(unfold(sent["From"])):
            problems.append(f"author {got['From']!r}, sent {unfold(sent['From'])!r}")
        gb = stripspace(got.get_content())
        sb = stripspace(sent.get_content())
        if gb != sb:
            problems.append(first_diff(sb, gb, "text"))
        if problems:
            return res.line(self.t, what, problems[0], problems[1:])
        return res.line(self.t, what)

    def base(self, done):
        """Check out the topic's base in the scratch tree; return (rev, description)."""
        k = 0
        while k < len(self.deps) and k < len(self.before) and self.deps[k] == self.before[k]:
            k += 1
        start = f"rust-mm/{self.before[k - 1]}" if k else "pristine"
        rev = checkout(start)
        desc = "the pristine tree" + (f" + {' + '.join(self.deps[:k])} ({start})" if k else "")
        for d in self.deps[k:]:
            dep = done.get(d)
            if dep is None or not dep.b4_mbx:
                raise GitError(f"b4 gave no mbox for {d}, which {self.t} depends on")
            r = subprocess.run(["git", "-C", TREE, "am", "-q", dep.b4_mbx], capture_output=True,
                               text=True, env=ISOLATED)
            if r.returncode != 0:
                raise GitError(f"b4's mbox of {d} does not apply: {r.stdout}{r.stderr}".strip())
            desc += f" + {d} (b4's mbox)"
        return git(TREE, "rev-parse", "HEAD").strip(), desc

    def checkout_base(self, done):
        """The base in the scratch tree, before b4 runs there."""
        self.base_rev = self.base_error = None
        try:
            self.base_rev, self.base_desc = self.base(done)
        except GitError as e:
            self.base_error = str(e)
            checkout("pristine")

    # 4
    def apply(self, res):
        self.applied = None
        if self.base_error:
            what = f"git am applies b4's {self.n} patches on the pristine tree + {' + '.join(self.deps)}"
            return res.line(self.t, what, f"no base: {self.base_error}")
        what = f"git am applies b4's {self.n} patches on {self.base_desc}"
        if not self.b4_mbx:
            return res.line(self.t, what, "not run: b4 am did not pass")
        r = subprocess.run(["git", "-C", TREE, "am", self.b4_mbx], capture_output=True,
                           text=True, env=ISOLATED)
        with open(os.path.join(self.out, "git-am.log"), "w") as f:
            f.write(r.stdout + r.stderr)
        if r.returncode != 0:
            git(TREE, "am", "--abort", check=False)
            out = (r.stdout + r.stderr).strip().split("\n")
            failed = [ln for ln in out if ln.startswith("Patch failed at")]
            return res.line(self.t, what, failed[0] if failed else "git am failed", out[-12:])
        commits = git(TREE, "rev-list", "--reverse", f"{self.base_rev}..HEAD").split()
        if len(commits) != self.n:
            return res.line(self.t, what, f"{len(commits)} commits, not {self.n}")
        self.applied = commits
        return res.line(self.t, what)

    def sent_reference(self):
        """Per sent patch: (tree after it on the base, message, author, date)."""
        with open(os.path.join(self.dir, "series")) as f:
            files = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
        if len(files) != self.n:
            raise GitError(f"{self.dir}/series lists {len(files)} patches, not {self.n}")
        index = os.path.join(self.out, "index")
        if os.path.exists(index):
            os.unlink(index)
        ienv = dict(ISOLATED, GIT_INDEX_FILE=index)
        git(KSRC, "read-tree", self.base_rev, env=ienv)
        ref = []
        for name in files:
            path = os.path.join(self.dir, name)
            r = subprocess.run(["git", "-C", KSRC, "apply", "--cached", path], capture_output=True,
                               text=True, env=ienv)
            if r.returncode != 0:
                raise GitError(f"the sent {name} does not apply: {r.stderr.strip()}")
            tree = git(KSRC, "write-tree", env=ienv).strip()
            with open(path, "rb") as f:
                raw = f.read()
            m, p = os.path.join(self.out, "mi-msg"), os.path.join(self.out, "mi-patch")
            mi = subprocess.run(["git", "mailinfo", "--encoding=UTF-8", m, p], input=raw,
                                capture_output=True, env=ISOLATED)
            info = dict(ln.split(": ", 1) for ln in mi.stdout.decode().split("\n") if ": " in ln)
            with open(m, encoding="utf-8", errors="replace") as f:
                body = f.read()
            msg = stripspace(info.get("Subject", "") + "\n\n" + body)
            ref.append((name, tree, msg, info.get("Author", ""), info.get("Email", ""),
                        email.utils.parsedate_to_datetime(info["Date"]).timestamp() if "Date" in info else None))
        os.unlink(index)
        return ref

    # 5
    def check_commits(self, res):
        what = "each commit is the patch sent (tree, message, author, date)"
        self.ref_tree = None
        if not self.applied:
            return res.line(self.t, what, "not run: b4's patches were not applied")
        try:
            ref = self.sent_reference()
        except GitError as e:
            return res.line(self.t, what, str(e))
        self.ref_tree = ref[-1][1]
        problems = []
        for k, (c, (name, tree, msg, an, ae, at)) in enumerate(zip(self.applied, ref), 1):
            got = git(TREE, "log", "-1", "--format=%T%n%an%n%ae%n%at%n%B", c).split("\n", 4)
            if got[0] != tree:
                problems.append(f"patch {k}/{self.n} ({name}): the tree differs from the sent patch's")
            if (got[1], got[2]) != (an, ae):
                problems.append(f"patch {k}/{self.n}: author {got[1]} <{got[2]}>, sent {an} <{ae}>")
            if at is not None and int(got[3]) != int(at):
                problems.append(f"patch {k}/{self.n}: author date {got[3]}, sent {int(at)}")
            gm = stripspace(got[4])
            if gm != msg:
                problems.append(f"patch {k}/{self.n} ({name}): the message is not the one sent: "
                                + first_diff(msg, gm, "message"))
        if problems:
            return res.line(self.t, what, problems[0], problems[1:])
        return res.line(self.t, what)

    # 6
    def check_tree(self, res):
        linear = self.deps == self.before
        if linear:
            what = f"the tree is the prepared tree's rust-mm/{self.t}"
        else:
            others = [x for x in self.before if x not in self.deps]
            what = (f"the tree is the pristine tree + {' + '.join(self.deps)} + the patches sent "
                    f"(not rust-mm/{self.t}, which also has {' '.join(others)})")
        if not self.applied:
            return res.line(self.t, what, "not run: b4's patches were not applied")
        head = git(TREE, "rev-parse", "HEAD^{tree}").strip()
        want = (git(KSRC, "rev-parse", f"rust-mm/{self.t}^{{tree}}").strip() if linear
                else self.ref_tree)
        if want is None:
            return res.line(self.t, what, "not run: the sent patches do not apply")
        if head != want:
            stat = git(TREE, "diff", "--stat", want, head, check=False).strip().split("\n")
            return res.line(self.t, what, f"tree {head[:12]}, not {want[:12]}", stat[-12:])
        return res.line(self.t, what)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    export = os.path.abspath(argv[0])
    if not os.path.isfile(os.path.join(KSRC, ".rust-mm-applied")):
        print(f"b4-check: the tree {KSRC} is not prepared (run: make prepare)", file=sys.stderr)
        return 2
    if not os.path.isdir(export):
        print(f"b4-check: {export} is not a directory (make series writes it)", file=sys.stderr)
        return 2
    info = {t["name"]: t for t in topicsmod.all_topics()}
    order = list(info)
    sel = argv[1:] or order
    for t in sel:
        if t not in info:
            print(f"b4-check: '{t}' is not a topic of kernel-patches/topics", file=sys.stderr)
            return 2
    res = Results()
    os.makedirs(WORK, exist_ok=True)
    shutil.rmtree(HOME, ignore_errors=True)
    os.makedirs(HOME)
    have_b4 = check_b4_itself(res)
    ensure_tree()
    done = {}
    for name in [t for t in order if t in sel]:
        shutil.rmtree(os.path.join(WORK, name), ignore_errors=True)
        t = Topic(name, export, order, info)
        done[name] = t
        t.check_thread(res)
        t.checkout_base(done)
        if have_b4:
            t.run_b4(res)
        else:
            res.line(name, f"b4 am reconstructs the cover letter and {t.n}/{t.n} patches with no warning",
                     "not run: no b4")
        t.check_cover(res)
        t.apply(res)
        t.check_commits(res)
        t.check_tree(res)
    try:
        checkout("pristine")
    except GitError:
        pass
    print(f"b4: {res.passed} passed, {res.failed} failed")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
