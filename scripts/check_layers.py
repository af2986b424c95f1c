#!/usr/bin/env python3
"""Checks that the engine's parts depend on each other one way only, from the symbols its
object files define and use (nm over libparagon.a): the core uses no part; tensor/ and inet/
use only the core; bench/ uses tensor/, inet/ and the core; jobs/ may use all of them. lang/
(pgl, compiled to nets) is the inet part's front end: it counts as inet/. A
declaration in a public header cannot hide an arrow: what is checked is who calls whom.

usage: check_layers.py LIBPARAGON.a   (exit 1, naming each wrong arrow, when one is found)"""
import subprocess
import sys

# What each part may use besides itself.
ALLOWED = {
    'core': set(),
    'tensor': {'core'},
    'inet': {'core'},
    'bench': {'core', 'tensor', 'inet'},
    'jobs': {'core', 'tensor', 'inet', 'bench'},
}


def part_of(member: str) -> str:
    base = member.rsplit('/', 1)[-1]
    if base.startswith('engine_lang_'):
        return 'inet'
    for part in ('tensor', 'inet', 'bench', 'jobs'):
        if base.startswith(f'engine_{part}_'):
            return part
    return 'core'  # engine/*.c and the embedded kernels and examples


def main() -> int:
    out = subprocess.run(['nm', '-A', '--defined-only', '-g', sys.argv[1]], capture_output=True,
                         text=True, check=True).stdout
    owner = {}
    for line in out.splitlines():
        path, _, rest = line.rpartition(':')
        fields = rest.split()
        if len(fields) >= 3:
            owner[fields[2]] = part_of(path)
    out = subprocess.run(['nm', '-A', '--undefined-only', sys.argv[1]], capture_output=True,
                         text=True, check=True).stdout
    wrong = set()
    for line in out.splitlines():
        path, _, rest = line.rpartition(':')
        sym = rest.split()[-1] if rest.split() else ''
        user, used = part_of(path), owner.get(sym)
        if used and used != user and used not in ALLOWED[user]:
            wrong.add(f'{path.rsplit("/", 1)[-1]} ({user}) uses {sym} ({used})')
    for w in sorted(wrong):
        print(f'check_layers: {w}')
    if not wrong:
        print(f'check_layers: {len(owner)} symbols, every arrow goes down')
    return 1 if wrong else 0


if __name__ == '__main__':
    sys.exit(main())
