#!/usr/bin/env python3
"""An experiment on the PTX text, for `TESSEL_PTX=<file>` (no host rebuild).

    ptx-occupancy.py IN.ptx OUT.ptx ENTRY=PAD[:MAXNREG] ...

For each named entry: PAD bytes of static shared memory the kernel does not use (so fewer of its
blocks fit on a multiprocessor; one volatile store keeps ptxas from dropping it), and, after a
colon, a `.maxnreg` directive. The dynamic shared-memory limit each kernel gets must leave room
for PAD: run with TESSEL_RMSNORM_SMEM lowered (docs/perf.md, session 19).
"""
import sys


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    text = open(argv[1]).read().split('\n')
    for spec in argv[3:]:
        name, _, rest = spec.partition('=')
        pad, _, nreg = rest.partition(':')
        head = f'.visible .entry {name}('
        if head not in text:
            sys.exit(f'{spec}: no entry {name} in {argv[1]}')
        body = text.index('{', text.index(head))
        if int(pad or 0) > 0:
            var = f'occ_pad_{name}'
            text[body + 1:body + 1] = [
                f'\t.shared .align 16 .b8 {var}[{int(pad)}];',
                f'\t{{ .reg .b32 occ_t; mov.b32 occ_t, 0; st.volatile.shared.u32 [{var}], occ_t; }}',
            ]
        if nreg:
            text[body:body] = [f'.maxnreg {int(nreg)}']
    open(argv[2], 'w').write('\n'.join(text))


if __name__ == '__main__':
    main(sys.argv)
