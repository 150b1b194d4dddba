#!/usr/bin/env python3
"""Writes the kernels of the public NKI matrix-multiplication tutorial as
NeuronCore assembly: C[M,N] = A[M,K] @ B[K,N], bf16 in, fp32 PSUM, bf16 out.

The tutorial ("NKI matrix multiplication", matrix_multiplication_nki_kernels.py
of the Neuron SDK) takes lhsT = A transposed ([K, M], buffer `at`), rhs = B
([K, N], buffer `b`) and writes C ([M, N], buffer `c`). Its four kernels,
reproduced instruction by instruction:

  basic       nki_matmul_basic_: one [M<=128, K=128] x [128, N<=512] tile
              (the tutorial's 64x128x512): two loads, one matmul, a copy out
              of PSUM and a store.
  tiled       nki_matmul_tiled_: for each [128, 512] output tile, for each of
              the K/128 steps, load a [128,128] lhsT tile and a [128,512] rhs
              tile, matmul into one PSUM bank; copy to SBUF, store.
  hoist       nki_matmul_hoist_load_ ("Optimization 1"): per 128 rows of the
              output, the whole lhsT column (K/128 tiles) is loaded once; per
              512 columns the whole rhs column.
  block_free  nki_matmul_block_free_dimension_ ("Optimization 2"): blocks of
              2 x 128 rows and 2 x 512 columns share their loaded tiles.
  optimized   nki_matmul_fully_optimized_ ("Optimization 3"): blocks of
              TILES_IN_BLOCK_M/N/K = 16/2/8 tiles; the K blocks accumulate in
              bf16 SBUF result tiles (VectorE tensor_tensor add from PSUM),
              loads of [128, BLOCK] rows for DMA efficiency, the result packed
              into [128, 1024] rows (ScalarE copies) and stored once.

How a load becomes instructions follows the public DMA guides: a load of a
[128, F] tile is 16 transfers, one per DMA engine, each moving 8 partitions.
Every instruction signals its queue's semaphore (s0-s15 the DMA queues, s16
TensorE, s17 VectorE, s18 ScalarE, s19 GpSimd), so "the v-th instruction of
queue q is done" is "s_q >= v"; waits are the minimal set (transitively
implied ones dropped), more than four go on NOPs. SBUF tiles are rotating
slots sized to what the 192 KiB partitions of a NeuronCore-v2 hold (the
tutorial leaves allocation to the Neuron compiler); each load is issued as
soon as its slot's previous contents have been read by every instruction
that uses them, so loads run ahead of TensorE as far as SBUF allows.

A program is a sequence of identical kernels, one per unit of the outermost
loop (tiled: output tile; hoist: 128 rows; block_free: 256 rows; optimized:
1024 columns); trnc runs kernels one after another. `--kernels N` writes only
the first N of them (the cost model adds kernel times, so the full program's
estimate is TOTAL/N times theirs; the header comment gives TOTAL).

usage: gen_nki_matmul_asm.py VARIANT M K N [--kernels N] [--blocks TM,TN,TK]
       [--target trn1]
"""
import argparse
import sys

P, TN = 128, 512                    # partitions / tile K and M, moving width
QUEUES = [f"dma{i}" for i in range(16)] + ["tensor", "vector", "scalar", "gpsimd"]
SEM = {q: i for i, q in enumerate(QUEUES)}
CHUNKS = 16                         # DMA transfers per 128-partition load
ROWS = P // CHUNKS                  # partitions per transfer
BANK = 2048                         # PSUM bank bytes per partition


class Kernel:
    """One kernel's instruction list with semaphore bookkeeping."""

    def __init__(self, name, out):
        self.out = out
        out.append(f".kernel {name} {len(QUEUES)}")
        self.count = {q: 0 for q in QUEUES}
        self.known = {q: [0] * len(QUEUES) for q in QUEUES}
        self.vcs = {q: [] for q in QUEUES}

    def emit(self, q, text, deps=()):
        qi, kn = SEM[q], self.known[q]
        need = {}
        for dep in deps:
            if dep is None:
                continue
            dq, v = dep
            di = SEM[dq]
            if di != qi and kn[di] < v:
                need[di] = max(need.get(di, 0), v)
        waits = sorted(need.items())
        for di, v in waits:
            vc = self.vcs[QUEUES[di]][v - 1]
            for e, c in enumerate(vc):
                if c > kn[e]:
                    kn[e] = c
        while len(waits) > 4:
            self.out.append(f"{q} nop wait=" + ",".join(f"s{d}>={v}" for d, v in waits[:4]))
            waits = waits[4:]
        w = (" wait=" + ",".join(f"s{d}>={v}" for d, v in waits)) if waits else ""
        self.out.append(f"{q} {text}{w} signal=s{qi}")
        self.count[q] += 1
        kn[qi] = self.count[q]
        self.vcs[q].append(tuple(kn))
        return (q, self.count[q])


class Slot:
    """A region (SBUF tile or PSUM bank): its writers and readers so far, and
    how many planned reads of its contents are still to be emitted."""

    def __init__(self, off):
        self.off = off
        self.writers = {}
        self.readers = []
        self.left = 0

    def begin_write(self, planned_reads):
        if self.left:
            raise RuntimeError("slot reused before its contents were read")
        war = self.readers + list(self.writers.values())
        self.readers, self.writers, self.left = [], {}, planned_reads
        return war

    def read(self, ref):
        self.readers.append(ref)
        self.left -= 1

    def deps(self, chunk=None):
        if chunk is None or chunk not in self.writers:
            return list(self.writers.values())
        return [self.writers[chunk]]


class Loads:
    """Loads in program order, each issued once its slot is free."""

    def __init__(self):
        self.jobs, self.done, self.i = [], set(), 0

    def add(self, key, slot, planned, fn):
        self.jobs.append((key, slot, planned, fn))

    def pump(self, need=()):
        while self.i < len(self.jobs):
            key, slot, planned, fn = self.jobs[self.i]
            if slot.left:
                if any(k not in self.done for k in need):
                    raise RuntimeError(f"load {key} needed but its slot is busy")
                return
            war = slot.begin_write(planned)
            fn(slot, war)
            self.done.add(key)
            self.i += 1


class Gen:
    def __init__(self, M, K, N, target):
        self.M, self.K, self.N = M, K, N
        self.out = []
        self.sbuf_top = 0
        self.sbuf_cap = {"trn1": 192, "trn2": 224, "trn3": 256}[target] * 1024
        self.target = target

    def alloc(self, nbytes):
        off = self.sbuf_top
        self.sbuf_top += nbytes
        if self.sbuf_top > self.sbuf_cap:
            raise RuntimeError(f"SBUF overflow: {self.sbuf_top} > {self.sbuf_cap} bytes per partition")
        return off

    def load(self, kern, slot, war, buf, stride, row0, col0, width, parts=P):
        """[parts, width] bf16 rows row0.. of HBM buffer buf (row stride in
        elements) into slot, one transfer of 8 partitions per DMA queue."""
        for c in range(parts // ROWS):
            src = ((row0 + c * ROWS) * stride + col0) * 2
            ref = kern.emit(f"dma{c}", f"dma_copy dst=sbuf[{c * ROWS}:{ROWS}]@{slot.off}:bf16[[1,{width}]] "
                            f"src0=hbm:{buf}@{src}:bf16[[{stride},{ROWS}],[1,{width}]] mode=direct", war)
            slot.writers[c] = ref

    def store(self, kern, slot, row0, col0, width, parts=P):
        for c in range(parts // ROWS):
            dst = ((row0 + c * ROWS) * self.N + col0) * 2
            ref = kern.emit(f"dma{c}", f"dma_copy dst=hbm:c@{dst}:bf16[[{self.N},{ROWS}],[1,{width}]] "
                            f"src0=sbuf[{c * ROWS}:{ROWS}]@{slot.off}:bf16[[1,{width}]] mode=direct",
                            slot.deps(c))
            slot.readers.append(ref)

    def matmul(self, kern, bank, lhs, loff, rhs, roff, acc):
        deps = lhs.deps() + rhs.deps() + (bank.deps() if acc else bank.begin_write(0))
        ref = kern.emit("tensor", f"matmul dst=psum[0:{P}]@{bank.off}:f32[[1,{TN}]] "
                        f"src0=sbuf[0:{P}]@{lhs.off + loff}:bf16[[1,{P}]] "
                        f"src1=sbuf[0:{P}]@{rhs.off + roff}:bf16[[1,{TN}]] acc={1 if acc else 0}", deps)
        lhs.read(ref)
        rhs.read(ref)
        bank.writers = {"all": ref}
        return ref

    def header(self, variant, total, nk):
        M, K, N = self.M, self.K, self.N
        o = self.out
        o.append(f"# NKI matmul tutorial, {variant}: C[{M},{N}] = A[{M},{K}] @ B[{K},{N}], bf16")
        o.append(f"# kernels: {nk} of {total} (identical up to addresses)")
        o.append("# generated by bench/gen_nki_matmul_asm.py " + " ".join(sys.argv[1:]))
        o.append(".version 1")
        o.append(f".target {self.target}")
        o.append(f".buffer at input bf16 {K * M * 2}")
        o.append(f".buffer b input bf16 {K * N * 2}")
        o.append(f".buffer c output bf16 {M * N * 2}")

    def banks(self, n):
        return [Slot(i * BANK) for i in range(n)]

    # --- nki_matmul_basic_ ------------------------------------------------
    def basic(self, nk):
        M, K, N = self.M, self.K, self.N
        if M > P or M % ROWS or K != P or N > TN:
            raise SystemExit("basic: one tile, M <= 128 (a multiple of 8), K = 128, N <= 512")
        A, B, O = Slot(self.alloc(M * 2)), Slot(self.alloc(N * 2)), Slot(self.alloc(N * 2))
        (bank,) = self.banks(1)
        self.header("basic", 1, 1)
        kern = Kernel("basic", self.out)
        self.load(kern, A, A.begin_write(1), "at", M, 0, 0, M)
        self.load(kern, B, B.begin_write(1), "b", N, 0, 0, N)
        ref = kern.emit("tensor", f"matmul dst=psum[0:{M}]@{bank.off}:f32[[1,{N}]] "
                        f"src0=sbuf[0:{P}]@{A.off}:bf16[[1,{M}]] src1=sbuf[0:{P}]@{B.off}:bf16[[1,{N}]] acc=0",
                        A.deps() + B.deps())
        bank.writers = {"all": ref}
        ref = kern.emit("vector", f"tensor_copy dst=sbuf[0:{M}]@{O.off}:bf16[[1,{N}]] "
                        f"src0=psum[0:{M}]@{bank.off}:f32[[1,{N}]]", bank.deps())
        O.writers = {"all": ref}
        self.store(kern, O, 0, 0, N, parts=M)

    # --- nki_matmul_tiled_ ------------------------------------------------
    def tiled(self, nk):
        M, K, N = self.M, self.K, self.N
        KT, NT = K // P, N // TN
        depth = min(16, KT)
        A = [Slot(self.alloc(P * 2)) for _ in range(depth)]
        B = [Slot(self.alloc(TN * 2)) for _ in range(depth)]
        O = Slot(self.alloc(TN * 2))
        (bank,) = self.banks(1)
        tiles = [(m, n) for m in range(M // P) for n in range(NT)]
        self.header("tiled", len(tiles), min(nk, len(tiles)))
        for m, n in tiles[:nk]:
            kern = Kernel(f"tile_m{m}_n{n}", self.out)
            for s in A + B + [O, bank]:
                s.writers, s.readers, s.left = {}, [], 0
            ld = Loads()
            for k in range(KT):
                ld.add(("a", k), A[k % depth], 1,
                       lambda sl, war, k=k: self.load(kern, sl, war, "at", M, k * P, m * P, P))
                ld.add(("b", k), B[k % depth], 1,
                       lambda sl, war, k=k: self.load(kern, sl, war, "b", N, k * P, n * TN, TN))
            for k in range(KT):
                ld.pump(need=[("a", k), ("b", k)])
                self.matmul(kern, bank, A[k % depth], 0, B[k % depth], 0, k > 0)
                ld.pump()
            ref = kern.emit("vector", f"tensor_copy dst=sbuf[0:{P}]@{O.off}:bf16[[1,{TN}]] "
                            f"src0=psum[0:{P}]@{bank.off}:f32[[1,{TN}]]", bank.deps() + O.begin_write(0))
            bank.readers.append(ref)
            O.writers = {"all": ref}
            self.store(kern, O, m * P, n * TN, TN)

    # --- nki_matmul_hoist_load_ ---------------------------------------------
    def hoist(self, nk):
        M, K, N = self.M, self.K, self.N
        KT, NT = K // P, N // TN
        L = [Slot(self.alloc(P * 2)) for _ in range(KT)]
        depth = min(2 * KT, (self.sbuf_cap - self.sbuf_top - 2 * TN * 2) // (TN * 2))
        R = [Slot(self.alloc(TN * 2)) for _ in range(depth)]
        O = [Slot(self.alloc(TN * 2)) for _ in range(2)]
        banks = self.banks(2)
        rows = list(range(M // P))
        self.header("hoist", len(rows), min(nk, len(rows)))
        for m in rows[:nk]:
            kern = Kernel(f"rows_m{m}", self.out)
            for s in L + R + O + banks:
                s.writers, s.readers, s.left = {}, [], 0
            ld = Loads()
            for k in range(KT):
                ld.add(("l", k), L[k], NT, lambda sl, war, k=k: self.load(kern, sl, war, "at", M, k * P, m * P, P))
            for n in range(NT):
                for k in range(KT):
                    ld.add(("r", n, k), R[(n * KT + k) % depth], 1,
                           lambda sl, war, n=n, k=k: self.load(kern, sl, war, "b", N, k * P, n * TN, TN))
            for n in range(NT):
                bank = banks[n % 2]
                for k in range(KT):
                    ld.pump(need=[("l", k), ("r", n, k)])
                    self.matmul(kern, bank, L[k], 0, R[(n * KT + k) % depth], 0, k > 0)
                    ld.pump()
                o = O[n % 2]
                ref = kern.emit("vector", f"tensor_copy dst=sbuf[0:{P}]@{o.off}:bf16[[1,{TN}]] "
                                f"src0=psum[0:{P}]@{bank.off}:f32[[1,{TN}]]", bank.deps() + o.begin_write(0))
                bank.readers.append(ref)
                o.writers = {"all": ref}
                self.store(kern, o, m * P, n * TN, TN)

    # --- nki_matmul_block_free_dimension_ -------------------------------------
    def block_free(self, nk, bm_tiles=2, bn_tiles=2):
        M, K, N = self.M, self.K, self.N
        KT = K // P
        BM, BN = bm_tiles * P, bn_tiles * TN
        L = [[Slot(self.alloc(P * 2)) for _ in range(KT)] for _ in range(bm_tiles)]
        nout = bm_tiles * bn_tiles
        depth = min(2 * bn_tiles * KT, (self.sbuf_cap - self.sbuf_top - nout * TN * 2) // (TN * 2))
        R = [Slot(self.alloc(TN * 2)) for _ in range(depth)]
        O = [Slot(self.alloc(TN * 2)) for _ in range(nout)]
        banks = self.banks(2)
        blocks = list(range(M // BM))
        self.header("block_free", len(blocks), min(nk, len(blocks)))
        for mb in blocks[:nk]:
            kern = Kernel(f"rows_m{mb}", self.out)
            for s in [x for row in L for x in row] + R + O + banks:
                s.writers, s.readers, s.left = {}, [], 0
            ld = Loads()
            nblocks = N // BN
            for bm in range(bm_tiles):
                for k in range(KT):
                    ld.add(("l", bm, k), L[bm][k], nblocks * bn_tiles,
                           lambda sl, war, bm=bm, k=k: self.load(kern, sl, war, "at", M, k * P,
                                                                 (mb * bm_tiles + bm) * P, P))
            rslot = {}
            for nb in range(nblocks):
                for bn in range(bn_tiles):
                    for k in range(KT):
                        idx = (nb * bn_tiles + bn) * KT + k
                        rslot[nb, bn, k] = R[idx % depth]
                        ld.add(("r", nb, bn, k), R[idx % depth], bm_tiles,
                               lambda sl, war, nb=nb, bn=bn, k=k: self.load(kern, sl, war, "b", N, k * P,
                                                                            (nb * bn_tiles + bn) * TN, TN))
            t = 0
            for nb in range(nblocks):
                for bm in range(bm_tiles):
                    for bn in range(bn_tiles):
                        bank = banks[t % 2]
                        for k in range(KT):
                            ld.pump(need=[("l", bm, k), ("r", nb, bn, k)])
                            self.matmul(kern, bank, L[bm][k], 0, rslot[nb, bn, k], 0, k > 0)
                            ld.pump()
                        o = O[bm * bn_tiles + bn]
                        ref = kern.emit("vector", f"tensor_copy dst=sbuf[0:{P}]@{o.off}:bf16[[1,{TN}]] "
                                        f"src0=psum[0:{P}]@{bank.off}:f32[[1,{TN}]]",
                                        bank.deps() + o.begin_write(0))
                        bank.readers.append(ref)
                        o.writers = {"all": ref}
                        self.store(kern, o, (mb * bm_tiles + bm) * P, (nb * bn_tiles + bn) * TN, TN)
                        t += 1

    # --- nki_matmul_fully_optimized_ ------------------------------------------
    def optimized(self, nk, tm=16, tn=2, tk=8):
        M, K, N = self.M, self.K, self.N
        BM, BN, BK = tm * P, tn * TN, tk * P
        NBM, NBN, NBK = M // BM, N // BN, K // BK
        assert M % BM == 0 and N % BN == 0 and K % BK == 0, "sizes must be multiples of the blocks"
        res_bytes = NBM * tm * tn * TN * 2
        res0 = self.alloc(res_bytes)
        RES = {(m, bm, bn): Slot(res0 + ((m * tm + bm) * tn + bn) * TN * 2)
               for m in range(NBM) for bm in range(tm) for bn in range(tn)}
        RH = [Slot(self.alloc(BN * 2)) for _ in range(2 * tk)]       # rhs rows, double-buffered
        LH = [Slot(self.alloc(BM * 2)) for _ in range(2 * tk)]       # lhsT rows, double-buffered
        PK = [Slot(self.alloc(BN * 2)) for _ in range(2)]            # packed result rows
        banks = self.banks(8)
        self.header("optimized", NBN, min(nk, NBN))
        for n in range(min(nk, NBN)):
            kern = Kernel(f"cols_n{n}", self.out)
            for s in list(RES.values()) + RH + LH + PK + banks:
                s.writers, s.readers, s.left = {}, [], 0
            # result_tiles = nl.zeros(...): one memset over every result tile
            zero = kern.emit("gpsimd", f"memset dst=sbuf[0:{P}]@{res0}:bf16[[1,{res_bytes // 2}]] imm0=0")
            for s in RES.values():
                s.writers = {"all": zero}
            ld = Loads()
            for k in range(NBK):
                for bk in range(tk):
                    ld.add(("r", k, bk), RH[(k % 2) * tk + bk], NBM * tn * tm,
                           lambda sl, war, k=k, bk=bk: self.load(kern, sl, war, "b", N, (k * tk + bk) * P,
                                                                 n * BN, BN))
                for m in range(NBM):
                    for bk in range(tk):
                        ld.add(("l", k, m, bk), LH[((k * NBM + m) % 2) * tk + bk], tn * tm,
                               lambda sl, war, k=k, m=m, bk=bk: self.load(kern, sl, war, "at", M,
                                                                          (k * tk + bk) * P, m * BM, BM))
            t = 0
            for k in range(NBK):
                for m in range(NBM):
                    for bn in range(tn):
                        for bm in range(tm):
                            bank = banks[t % 8]
                            t += 1
                            for bk in range(tk):
                                ld.pump(need=[("r", k, bk), ("l", k, m, bk)])
                                self.matmul(kern, bank, LH[((k * NBM + m) % 2) * tk + bk], bm * P * 2,
                                            RH[(k % 2) * tk + bk], bn * TN * 2, bk > 0)
                                ld.pump()
                            r = RES[m, bm, bn]
                            ref = kern.emit("vector", f"tensor_tensor dst=sbuf[0:{P}]@{r.off}:bf16[[1,{TN}]] "
                                            f"src0=sbuf[0:{P}]@{r.off}:bf16[[1,{TN}]] "
                                            f"src1=psum[0:{P}]@{bank.off}:f32[[1,{TN}]] op=add",
                                            bank.deps() + r.deps() + r.readers)
                            bank.readers.append(ref)
                            r.readers, r.writers = [], {"all": ref}
            for m in range(NBM):
                for bm in range(tm):
                    pk = PK[(m * tm + bm) % 2]
                    war = pk.begin_write(0)
                    for bn in range(tn):
                        r = RES[m, bm, bn]
                        ref = kern.emit("scalar", f"tensor_copy dst=sbuf[0:{P}]@{pk.off + bn * TN * 2}:bf16[[1,{TN}]] "
                                        f"src0=sbuf[0:{P}]@{r.off}:bf16[[1,{TN}]]", r.deps() + war)
                        r.readers.append(ref)
                        pk.writers[bn] = ref
                    pk.writers = {"all": max(pk.writers.values(), key=lambda x: x[1])}
                    self.store(kern, pk, (m * tm + bm) * P, n * BN, BN)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variant", choices=["basic", "tiled", "hoist", "block_free", "optimized"])
    ap.add_argument("M", type=int)
    ap.add_argument("K", type=int)
    ap.add_argument("N", type=int)
    ap.add_argument("--kernels", type=int, default=1 << 30, help="write only the first N kernels")
    ap.add_argument("--blocks", default="16,2,8", help="optimized: TILES_IN_BLOCK_M,N,K")
    ap.add_argument("--target", default="trn1", choices=["trn1", "trn2", "trn3"])
    a = ap.parse_args()
    g = Gen(a.M, a.K, a.N, a.target)
    if a.variant == "basic":
        g.basic(a.kernels)
        sys.stdout.write("\n".join(g.out) + "\n")
        return
    if a.M % P or a.K % P or a.N % TN:
        sys.exit("M and K must be multiples of 128, N of 512")
    if a.variant == "optimized":
        tm, tn, tk = (int(x) for x in a.blocks.split(","))
        g.optimized(a.kernels, tm, tn, tk)
    elif a.variant == "block_free":
        if a.M % 256 or a.N % 1024:
            sys.exit("block_free: M must be a multiple of 256, N of 1024")
        g.block_free(a.kernels)
    else:
        getattr(g, a.variant)(a.kernels)
    sys.stdout.write("\n".join(g.out) + "\n")


if __name__ == "__main__":
    main()
