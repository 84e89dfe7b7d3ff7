#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes to stdout an LLVM 14 IR module of random functions full of
implicit null checks (branches with !make.implicit), for faultline healable's
corpus (make check-healable):

    gen-random-nullchecks.py [--seed S] [--functions N] > random.ll

The same seed and count give the same module, byte for byte.  Each function
takes four pointers and two integers and is one of these shapes:

  straight  1 to 6 checks in a row, each on an argument or on a pointer
            loaded behind an earlier check; after each, a load, a store or a
            read-modify-write (add, sub, and, or, xor, inc, dec) of i8, i16,
            i32, i64, float, double or a pointer, at an offset of 0 to 4095
            (half of them below 128), sometimes followed by more accesses
            through the same pointer, and sometimes with a comparison
            computed before the check and used after it (flags live across
            the faulting instruction);
  loop      a list walk: the check on the node is the loop's exit test, a
            load or RMW in the body, then the next pointer;
  diamond   a check inside one arm of a branch, both arms joining after.

With --dense every function is instead an accessor, as a JIT emits for
field accessors and small methods: 1 to 10 checks of the arguments from
its first instruction on, each followed by one short access (offsets
below 32; loads, sign-extending loads, stores and read-modify-writes with
an immediate, of i8 to i64), so that several implicit checks fall within
its first 16 bytes and each is next to another.

The null path throws (calls throw_npe and returns), calls a slow path
(callee_i64, as the corpus's stubs.c defines it) with a live value and
returns its result, or rejoins the code after the access
with a default value (a phi).  llc-14 leaves some checks explicit (see
nullchecks.ll for when): the fault map has what it made implicit.

As in gen-many.sh, a check ends the block that computes its operands:
llc-14 looks for !make.implicit on the terminator of the machine block's
original IR block.
"""
import argparse
import random
import sys

INT_TYS = ["i8", "i16", "i32", "i64"]
FP_TYS = ["float", "double"]
SIZE = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "float": 4, "double": 8, "i8*": 8}
RMW_OPS = ["add", "sub", "and", "or", "xor", "inc", "dec"]


class Fn:
    """One function's body being written: its lines and fresh names."""

    def __init__(self, rng, name):
        self.rng = rng
        self.name = name
        self.lines = []
        self.tails = []  # blocks that go after the main path (null paths)
        self.n = 0

    def fresh(self, base):
        self.n += 1
        return "%s%d" % (base, self.n)

    def emit(self, line):
        self.lines.append("  " + line)

    def label(self, name):
        self.lines.append(name + ":")


def offset(rng, ty, dense=False):
    """An offset below 4096 (the default -imp-null-check-page-size); below 32 when dense."""
    size = SIZE[ty]
    if dense:
        off = rng.randrange(0, 32 - size + 1)
        return off - off % size if rng.random() < 0.85 else off
    r = rng.random()
    if r < 0.25:
        off = 0
    elif r < 0.5:
        off = rng.randrange(0, 128)
    else:
        off = rng.randrange(0, 4096 - 8)
    # Mostly naturally aligned; sometimes not (align 1).
    if rng.random() < 0.85:
        off -= off % size
    return off


def to_i64(f, ty, v):
    out = f.fresh("w")
    if ty == "i64":
        f.emit("%%%s = add i64 %%%s, 0" % (out, v))
    elif ty in FP_TYS:
        f.emit("%%%s = fptosi %s %%%s to i64" % (out, ty, v))
    elif ty == "i8*":
        f.emit("%%%s = ptrtoint i8* %%%s to i64" % (out, v))
    else:
        f.emit("%%%s = zext %s %%%s to i64" % (out, ty, v))
    return out


def from_i64(f, ty, v):
    out = f.fresh("s")
    if ty == "i64":
        f.emit("%%%s = add i64 %%%s, 0" % (out, v))
    elif ty in FP_TYS:
        f.emit("%%%s = sitofp i64 %%%s to %s" % (out, v, ty))
    elif ty == "i8*":
        f.emit("%%%s = inttoptr i64 %%%s to i8*" % (out, v))
    else:
        f.emit("%%%s = trunc i64 %%%s to %s" % (out, v, ty))
    return out


def address(f, ptr, ty, off):
    g = f.fresh("g")
    t = f.fresh("t")
    f.emit("%%%s = getelementptr i8, i8* %%%s, i64 %d" % (g, ptr, off))
    f.emit("%%%s = bitcast i8* %%%s to %s*" % (t, g, ty))
    return t


def align(ty, off):
    return SIZE[ty] if off % SIZE[ty] == 0 else 1


def access(f, ptr, acc, loaded):
    """One memory access through ptr: returns (new acc, a loaded pointer or None)."""
    rng = f.rng
    kind = rng.choice(["load", "load", "store", "rmw", "ptr"])
    if kind == "ptr":
        ty = "i8*"
    elif kind == "rmw":
        ty = rng.choice(INT_TYS)
    else:
        ty = rng.choice(INT_TYS + FP_TYS + ["i8*"])
    off = offset(rng, ty)
    t = address(f, ptr, ty, off)
    al = align(ty, off)
    if kind in ("load", "ptr"):
        v = f.fresh("v")
        f.emit("%%%s = load %s, %s* %%%s, align %d" % (v, ty, ty, t, al))
        if ty == "i8*":
            loaded = v
        w = to_i64(f, ty, v)
        out = f.fresh("acc")
        f.emit("%%%s = add i64 %%%s, %%%s" % (out, acc, w))
        return out, loaded
    if kind == "store":
        if rng.random() < 0.3 and ty != "i8*":
            val = "0" if ty in INT_TYS else "0.0"
            f.emit("store %s %s, %s* %%%s, align %d" % (ty, val, ty, t, al))
        else:
            s = from_i64(f, ty, acc)
            f.emit("store %s %%%s, %s* %%%s, align %d" % (ty, s, ty, t, al))
        out = f.fresh("acc")
        f.emit("%%%s = add i64 %%%s, 1" % (out, acc))
        return out, loaded
    op = rng.choice(RMW_OPS)
    v = f.fresh("v")
    r = f.fresh("r")
    f.emit("%%%s = load %s, %s* %%%s, align %d" % (v, ty, ty, t, al))
    if op == "inc":
        f.emit("%%%s = add %s %%%s, 1" % (r, ty, v))
    elif op == "dec":
        f.emit("%%%s = sub %s %%%s, 1" % (r, ty, v))
    elif rng.random() < 0.5:
        f.emit("%%%s = %s %s %%%s, %d" % (r, op, ty, v, rng.randrange(1, 100)))
    else:
        s = from_i64(f, ty, acc)
        f.emit("%%%s = %s %s %%%s, %%%s" % (r, op, ty, v, s))
    f.emit("store %s %%%s, %s* %%%s, align %d" % (ty, r, ty, t, al))
    out = f.fresh("acc")
    f.emit("%%%s = add i64 %%%s, 2" % (out, acc))
    return out, loaded


def null_path(f, h, acc, join):
    """The block h the null case goes to; join: (label, default) to rejoin, or None."""
    rng = f.rng
    blk = [h + ":"]
    if join:
        blk.append("  br label %%%s" % join)
    elif rng.random() < 0.5:
        blk.append("  call void @throw_npe()")
        blk.append("  ret i64 %d" % -rng.randrange(1, 1000))
    else:
        r = f.fresh("slow")
        blk.append("  %%%s = call i64 @callee_i64(i64 %%%s)" % (r, acc))
        blk.append("  ret i64 %%%s" % r)
    f.tails.extend(blk)


def check(f, ptr, acc, loaded):
    """A null check of ptr and what follows it.  Returns (acc, loaded)."""
    rng = f.rng
    h = f.fresh("h")
    b = f.fresh("b")
    flags = rng.random() < 0.3
    if flags:
        cmp = f.fresh("cmp")
        f.emit("%%%s = icmp slt i64 %%%s, %%y" % (cmp, acc))
    c = f.fresh("c")
    if rng.random() < 0.8:
        f.emit("%%%s = icmp eq i8* %%%s, null" % (c, ptr))
        f.emit("br i1 %%%s, label %%%s, label %%%s, !make.implicit !0" % (c, h, b))
    else:
        f.emit("%%%s = icmp ne i8* %%%s, null" % (c, ptr))
        f.emit("br i1 %%%s, label %%%s, label %%%s, !make.implicit !0" % (c, b, h))
    f.label(b)
    rejoin = rng.random() < 0.2
    before = acc
    acc, loaded = access(f, ptr, acc, loaded)
    for _ in range(rng.choice([0, 0, 1, 2])):
        acc, loaded = access(f, ptr, acc, loaded)
    if rejoin:
        j = f.fresh("j")
        came = f.last_block()
        f.emit("br label %%%s" % j)
        null_path(f, h, before, j)
        f.label(j)
        out = f.fresh("acc")
        f.emit("%%%s = phi i64 [ %%%s, %%%s ], [ %%%s, %%%s ]" % (out, acc, came, before, h))
        acc = out
        if loaded:
            loaded = None  # defined on one path only
    else:
        null_path(f, h, before, None)
    if flags:
        out = f.fresh("acc")
        f.emit("%%%s = select i1 %%%s, i64 %%%s, i64 %%x" % (out, cmp, acc))
        acc = out
    return acc, loaded


def last_block(self):
    for line in reversed(self.lines):
        if line.endswith(":") and not line.startswith(" "):
            return line[:-1]
    return "entry"


Fn.last_block = last_block


def straight(f):
    rng = f.rng
    acc = f.fresh("acc")
    f.emit("%%%s = add i64 %%x, 0" % acc)
    loaded = None
    for _ in range(rng.randrange(1, 7)):
        if loaded and rng.random() < 0.4:
            ptr = loaded
        else:
            ptr = "p%d" % rng.randrange(4)
        acc, loaded = check(f, ptr, acc, loaded)
    f.emit("ret i64 %%%s" % acc)


def loop(f):
    rng = f.rng
    f.emit("br label %loop")
    f.label("loop")
    f.emit("%node = phi i8* [ %p0, %entry ], [ %next, %latch ]")
    f.emit("%i = phi i64 [ 0, %entry ], [ %i1, %latch ]")
    f.emit("%acc0 = phi i64 [ %x, %entry ], [ %accl, %latch ]")
    f.emit("%c = icmp eq i8* %node, null")
    f.emit("br i1 %c, label %exit, label %body, !make.implicit !0")
    f.label("body")
    acc, _ = access(f, "node", "acc0", None)
    nt = address(f, "node", "i8*", rng.randrange(0, 64) * 8)
    f.emit("%%next = load i8*, i8** %%%s, align 8" % nt)
    f.emit("%i1 = add i64 %i, 1")
    f.emit("%more = icmp slt i64 %i1, %y")
    f.emit("br i1 %more, label %latch, label %exit")
    f.label("latch")
    f.emit("%%accl = add i64 %%%s, 0" % acc)
    f.emit("br label %loop")
    f.label("exit")
    f.emit("%%r = phi i64 [ %%acc0, %%loop ], [ %%%s, %%body ]" % acc)
    f.emit("ret i64 %r")


def diamond(f):
    rng = f.rng
    f.emit("%acc0 = add i64 %x, 0")
    f.emit("%side = icmp sgt i64 %y, 0")
    f.emit("br i1 %side, label %left, label %right")
    f.label("left")
    acc, _ = check(f, "p%d" % rng.randrange(4), "acc0", None)
    lb = f.last_block()
    f.emit("br label %join")
    f.label("right")
    acc2, _ = check(f, "p%d" % rng.randrange(4), "acc0", None)
    rb = f.last_block()
    f.emit("br label %join")
    f.label("join")
    f.emit("%%r = phi i64 [ %%%s, %%%s ], [ %%%s, %%%s ]" % (acc, lb, acc2, rb))
    f.emit("ret i64 %r")


def accessor(f):
    """1 to 10 checks on the arguments, each with one short access, from the entry on."""
    rng = f.rng
    acc = "x"
    for _ in range(rng.randrange(1, 11)):
        ptr = "p%d" % rng.randrange(4)
        h = f.fresh("h")
        b = f.fresh("b")
        c = f.fresh("c")
        f.emit("%%%s = icmp eq i8* %%%s, null" % (c, ptr))
        f.emit("br i1 %%%s, label %%%s, label %%%s, !make.implicit !0" % (c, h, b))
        f.label(b)
        kind = rng.choice(["load", "sext", "store", "rmw"])
        ty = rng.choice(INT_TYS)
        t = address(f, ptr, ty, offset(rng, ty, dense=True))
        v = f.fresh("v")
        out = f.fresh("acc")
        if kind == "store":
            f.emit("store %s %d, %s* %%%s, align 1" % (ty, rng.randrange(0, 100), ty, t))
            f.emit("%%%s = add i64 %%%s, 1" % (out, acc))
        elif kind == "rmw":
            r = f.fresh("r")
            f.emit("%%%s = load %s, %s* %%%s, align 1" % (v, ty, ty, t))
            f.emit("%%%s = %s %s %%%s, %d" % (r, rng.choice(["add", "sub", "and", "or", "xor"]),
                                               ty, v, rng.randrange(1, 100)))
            f.emit("store %s %%%s, %s* %%%s, align 1" % (ty, r, ty, t))
            f.emit("%%%s = add i64 %%%s, 2" % (out, acc))
        else:
            f.emit("%%%s = load %s, %s* %%%s, align 1" % (v, ty, ty, t))
            w = f.fresh("w")
            ext = "sext" if kind == "sext" else "zext"
            if ty == "i64":
                f.emit("%%%s = add i64 %%%s, 0" % (w, v))
            else:
                f.emit("%%%s = %s %s %%%s to i64" % (w, ext, ty, v))
            f.emit("%%%s = add i64 %%%s, %%%s" % (out, acc, w))
        acc = out
        f.tails.extend([h + ":", "  ret i64 %d" % -rng.randrange(1, 1000)]
                       if rng.random() < 0.5 else
                       [h + ":", "  call void @throw_npe()", "  ret i64 0"])
    f.emit("ret i64 %%%s" % acc)


def function(rng, seed, i, dense=False):
    f = Fn(rng, ("acc_%d_%d" if dense else "rnd_%d_%d") % (seed, i))
    shape = accessor if dense else rng.choices([straight, loop, diamond], [6, 2, 2])[0]
    shape(f)
    out = ["define i64 @%s(i8* %%p0, i8* %%p1, i8* %%p2, i8* %%p3, i64 %%x, i64 %%y) {" % f.name,
           "entry:"]
    out += f.lines + f.tails + ["}", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--functions", type=int, default=400)
    ap.add_argument("--dense", action="store_true",
                    help="accessors: several checks close together from the entry on")
    a = ap.parse_args()
    if a.functions < 0 or a.seed < 0:
        ap.error("--seed and --functions are non-negative")
    rng = random.Random(a.seed)
    w = sys.stdout.write
    w("; Generated by selftests/progs/gen-random-nullchecks.py --seed %d --functions %d%s:"
      " do not edit.\n" % (a.seed, a.functions, " --dense" if a.dense else ""))
    w('target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"\n')
    w('target triple = "x86_64-unknown-linux-gnu"\n\n')
    w("declare void @throw_npe()\n")
    w("declare i64 @callee_i64(i64)\n\n")
    for i in range(a.functions):
        w(function(rng, a.seed, i, a.dense))
        w("\n")
    w("!0 = !{}\n")


if __name__ == "__main__":
    main()
