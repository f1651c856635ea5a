#!/usr/bin/env python3
"""The man pages against fxctl's command table, and groff's verdict on them:
  ctl/tests/manpages.py PATH/TO/fxctl MANDIR [PAGE...]

Fails, one line per finding, when
  - a command of 'fxctl --help' has no MANDIR/fxctl-CMD.8, or a page
    fxctl-CMD.8 has no command;
  - a page lacks one of NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS,
    EXAMPLES, SEE ALSO, or its NAME line is not "fxctl\\-CMD \\- summary"
    with the summary of 'fxctl --help';
  - the OPTIONS section of fxctl-CMD.8 documents an option (long or short,
    read from the .TP tag lines) that 'fxctl help CMD' does not list under
    "Options for CMD", or lacks one that it lists; its SYNOPSIS names an
    option that is neither the command's nor a global one;
  - fxctl.8 does not name every fxctl-CMD(8) in COMMANDS, with the summary
    of 'fxctl --help', and in SEE ALSO;
  - groff -man -ww (and man --warnings, where man is installed, as lintian
    runs it) warns about any page, fxctl.8 and the extra PAGEs included.
"""
import os
import re
import shutil
import subprocess
import sys

SECTIONS = ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS', 'EXIT STATUS', 'EXAMPLES',
            'SEE ALSO']
OPT_RE = re.compile(r'^  (?:-([A-Za-z0-9]) \[ )?--([a-z][a-z0-9-]*)')
bad = []


def run(*args, env=None):
    return subprocess.run(args, capture_output=True, text=True, env=env)


def plain(text):
    """groff source to plain words: font escapes and quotes out, \\- to -."""
    text = re.sub(r'\\f(\[[^]]*\]|.)', '', text)
    text = text.replace('\\-', '-').replace('\\(dq', '"').replace('\\&', '')
    return re.sub(r'^\.[A-Z]{1,2}\s*', '', text).replace('"', '')


def sections(path):
    """{SECTION: [lines]} of a page."""
    out, cur = {}, None
    for line in open(path, encoding='utf-8'):
        line = line.rstrip('\n')
        m = re.match(r'^\.SH\s+"?([^"]*)"?$', line)
        if m:
            cur = m.group(1)
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def options_of(words):
    """(long names, short names) an option text names."""
    longs = set(re.findall(r'(?<![A-Za-z0-9-])--([a-z][a-z0-9-]*)', words))
    shorts = set(re.findall(r'(?<![A-Za-z0-9-])-([A-Za-z0-9])(?![A-Za-z0-9-])', words))
    return longs, shorts


def help_options(fxctl, cmd):
    text = run(fxctl, 'help', cmd).stdout
    longs, shorts = set(), set()
    on = False
    for line in text.split('\n'):
        if line.startswith('Options for '):
            on = True
        elif on and not line.strip():
            break
        elif on:
            m = OPT_RE.match(line)
            if m:
                longs.add(m.group(2))
                if m.group(1):
                    shorts.add(m.group(1))
    return longs, shorts


def check_page(fxctl, path, cmd, summary, glob_long, glob_short):
    name = os.path.basename(path)
    sec = sections(path)
    for s in SECTIONS:
        if s not in sec:
            bad.append(f'{name}: no section {s}')
    want = f'fxctl-{cmd} - {summary[0].lower()}{summary[1:].rstrip(".")}'
    got = ' '.join(plain(line) for line in sec.get('NAME', []) if line).strip()
    if got != want:
        bad.append(f"{name}: NAME is '{got}', the command table says '{want}'")
    # the tag line of every .TP in OPTIONS
    tags = []
    lines = sec.get('OPTIONS', [])
    for i, line in enumerate(lines):
        if line.startswith('.TP') and i + 1 < len(lines):
            tags.append(plain(lines[i + 1]))
    page_long, page_short = set(), set()
    for t in tags:
        lo, sh = options_of(t)
        page_long |= lo
        page_short |= sh
    h_long, h_short = help_options(fxctl, cmd)
    for o in sorted(page_long - h_long):
        bad.append(f"{name}: OPTIONS documents --{o}, which 'fxctl help {cmd}' does not have")
    for o in sorted(h_long - page_long):
        bad.append(f"{name}: 'fxctl help {cmd}' has --{o}, which OPTIONS does not document")
    for o in sorted(page_short - h_short):
        bad.append(f"{name}: OPTIONS documents -{o}, which 'fxctl help {cmd}' does not have")
    for o in sorted(h_short - page_short):
        bad.append(f"{name}: 'fxctl help {cmd}' has -{o}, which OPTIONS does not document")
    syn_long, syn_short = options_of(' '.join(plain(x) for x in sec.get('SYNOPSIS', [])))
    for o in sorted(syn_long - h_long - glob_long):
        bad.append(f'{name}: SYNOPSIS names --{o}, an option of neither {cmd} nor fxctl')
    for o in sorted(syn_short - h_short - glob_short):
        bad.append(f'{name}: SYNOPSIS names -{o}, an option of neither {cmd} nor fxctl')
    return len(h_long)


def groff_warnings(path):
    """What groff (and man, as lintian runs it) says about a page, or ''."""
    out = run('groff', '-man', '-Tutf8', '-ww', '-z', path).stderr
    if shutil.which('man'):
        env = dict(os.environ, LC_ALL='C.UTF-8', MANROFFSEQ='', MANWIDTH='80')
        r = run('man', '--warnings', '-E', 'UTF-8', '-l', '-Tutf8', '-Z', path, env=env)
        out += r.stderr
    return out.strip()


def main():
    fxctl, mandir, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    top = run(fxctl, '--help').stdout
    block = top.split('\nCommands:\n', 1)[1].split('\n\n', 1)[0]
    cmds = re.findall(r'^  ([a-z][a-z0-9-]*) +(\S.*)$', block, re.M)
    if len(cmds) < 7:
        print(f"FAIL: only {len(cmds)} commands in 'fxctl --help'")
        return 1
    glob_long, glob_short = set(), set()
    for line in top.split('Global options', 1)[1].split('\n\n', 1)[0].split('\n'):
        m = OPT_RE.match(line)
        if m:
            glob_long.add(m.group(2))
            glob_short |= {m.group(1)} if m.group(1) else set()
    names = {c for c, _ in cmds}
    pages = sorted(f for f in os.listdir(mandir) if re.match(r'^fxctl-.*\.8$', f))
    for f in pages:
        if f[len('fxctl-'):-len('.8')] not in names:
            bad.append(f'{f}: no command {f[6:-2]} in fxctl --help')
    nopts = 0
    for cmd, summary in cmds:
        path = os.path.join(mandir, f'fxctl-{cmd}.8')
        if not os.path.exists(path):
            bad.append(f'fxctl-{cmd}.8: missing: command {cmd} has no man page')
            continue
        nopts += check_page(fxctl, path, cmd, summary, glob_long, glob_short)
    main_page = os.path.join(mandir, 'fxctl.8')
    sec = sections(main_page)
    for part in ('COMMANDS', 'SEE ALSO'):
        text = '\n'.join(plain(x) for x in sec.get(part, []))
        for cmd in names:
            if not re.search(rf'(^|\s)fxctl-{re.escape(cmd)} \(8\)', text, re.M):
                bad.append(f'fxctl.8: {part} does not name fxctl-{cmd}(8)')
    # COMMANDS: ".TP", ".BR fxctl\-CMD (8)", then the table's summary
    text = '\n'.join(plain(x) for x in sec.get('COMMANDS', []))
    for cmd, summary in cmds:
        m = re.search(rf'^fxctl-{re.escape(cmd)} \(8\)\n(.*)$', text, re.M)
        if m and m.group(1) != summary:
            bad.append(f"fxctl.8: COMMANDS says fxctl-{cmd}(8) '{m.group(1)}', "
                       f"the command table '{summary}'")
    if not shutil.which('groff'):
        bad.append("groff not found: install groff-base ('make deps')")
    else:
        for path in [main_page] + [os.path.join(mandir, f) for f in pages] + extra:
            w = groff_warnings(path)
            if w:
                bad.append(f'{os.path.basename(path)}: groff/man warn:\n{w}')
    for b in bad:
        print('FAIL:', b)
    print(f'{len(cmds)} commands, {nopts} options, {len(pages) + 1 + len(extra)} pages checked'
          + (f'; {len(bad)} findings' if bad else ''))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
