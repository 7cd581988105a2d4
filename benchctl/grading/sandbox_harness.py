"""In-child harness of `benchctl.grading.sandbox`: `python -I -S -B sandbox_harness.py SPEC_FILE`.

Trusted code that runs inside the sandboxed child BEFORE any candidate code.  Standard library only (the
interpreter runs without site-packages and without benchctl on its path).  In order it:

1. reads the marshal-encoded spec written by the trusted parent (candidate source, setup code, expressions,
   limits, identity) and deletes the file; enters a new PID namespace (`enter_pid_namespace`: the candidate
   runs as pid 2 under a reaping init, and everything in the namespace dies with that init);
2. [root, or in its own user namespace] enters a private mount namespace: empty read-only tmpfs over `hide_paths`
   (the interpreter's own
   `sys.path` directories are bind-mounted back read-only), fresh size-capped tmpfs over the world-writable
   directories (`private_tmp`), the work directory re-created there, and a /proc of its own PID namespace;
3. enters a new network namespace (`unshare(CLONE_NEWNET)`; non-root: with `CLONE_NEWUSER`);
4. sets the rlimits (CPU, AS+DATA, NPROC, FSIZE, NOFILE, CORE=0);
5. [root] drops to the per-run uid/gid (no supplementary groups), sets PR_SET_NO_NEW_PRIVS, chdirs to the work dir;
6. sends a `hello` record with what actually worked, over the result channel (a pipe fd);
7. compiles and execs the candidate in a fresh namespace (`__name__ == "__candidate__"`), then the setup code;
8. restores the builtins captured at import time, evaluates each expression and sends its value in a strict,
   builtin-types-only encoding (exact `type()` checks, so subclasses and objects with custom `__eq__` are
   refused as "unverifiable"), then a `done` record, and leaves with `os._exit` (no atexit hooks).

Records are `ascii()` literals, one per line; the parent (`sandbox_protocol.py`, `ast.literal_eval`) checks
their order.  The channel is not secret: the candidate could write to it, but it never sees the expected values
(the parent keeps them), so a forged record is no better than returning that value from the function under test.
"""

import builtins
import collections
import marshal
import os
import resource
import signal
import struct
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
MAX_DEPTH, MAX_NODES = 100, 2_000_000

# Step 0: trusted references, taken before any candidate code exists.
_BUILTINS = dict(builtins.__dict__)
_type, _fmt, _fhex, _items, _write = type, format, float.hex, dict.items, os.write
_EXACT = {list: "l", tuple: "t", set: "S", frozenset: "F"}
_EXTRA = {collections.OrderedDict: "od", collections.defaultdict: "dd", collections.Counter: "ct"}


class Unverifiable(Exception):
    """A value that is not made of plain builtin types (or is too deep / too large)."""


def encode(value, depth=0, budget=None):
    """Tagged tree (lists, str, bool, None) of a value made only of exact builtin types, else Unverifiable."""
    budget = [MAX_NODES] if budget is None else budget
    budget[0] -= 1
    if depth > MAX_DEPTH or budget[0] < 0:
        raise Unverifiable("value too deep or too large")
    t = _type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return ["i", _fmt(value, "x")]
    if t is float:
        return ["f", _fhex(value)]
    if t is complex:
        return ["c", _fhex(value.real), _fhex(value.imag)]
    if t is bytes or t is bytearray:
        return ["b" if t is bytes else "B", bytes.hex(value)]
    if t in _EXACT:
        return [_EXACT[t]] + [encode(v, depth + 1, budget) for v in value]
    if t is collections.deque:
        return ["dq"] + [encode(v, depth + 1, budget) for v in value]
    if t is dict or t in _EXTRA:
        pairs = [[encode(k, depth + 1, budget), encode(v, depth + 1, budget)] for k, v in _items(value)]
        return ["d" if t is dict else _EXTRA[t]] + pairs
    raise Unverifiable(f"result of type {_safe_name(t)} is not a plain builtin value")


def _safe_name(obj) -> str:
    try:
        return str(_type.__dict__["__name__"].__get__(obj))[:80]
    except BaseException:  # noqa: BLE001 - hostile metaclasses
        return "?"


def _describe(exc) -> dict:
    try:
        msg = str(exc)[:300]
    except BaseException:  # noqa: BLE001 - hostile __str__
        msg = "?"
    return {"exc": _safe_name(_type(exc)), "msg": msg}


def make_sender(fd):
    """`send(record)`: one line (the record's `ascii()` literal) on the channel fd; bound before the candidate."""
    _ascii, _encode = ascii, str.encode

    def send(record):
        data = _encode(_ascii(record) + "\n", "ascii")
        while data:
            data = data[_write(fd, data) :]

    return send


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True), ctypes


def _mount(libc, ctypes, src, dst, fstype, flags, data=None):
    def enc(s):
        return None if s is None else s.encode()

    if libc.mount(enc(src), enc(dst), enc(fstype), flags, enc(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount {dst}: {os.strerror(ctypes.get_errno())}")


def _under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def isolate_filesystem(spec, libc, ctypes):
    """[root] Private mount namespace: hide `hide_paths`, fresh tmpfs over `private_tmp`, work dir inside."""
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    _mount(libc, ctypes, None, "/", None, MS_REC | MS_PRIVATE)
    keep = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in sys.path if os.path.isdir(p)}
    hidden = [h for h in spec["hide_paths"] if os.path.isdir(h) and not os.path.islink(h)]
    for h in hidden:
        _mount(libc, ctypes, "tmpfs", h, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,mode=755")
    for t in spec["private_tmp"]:
        if os.path.isdir(t) and not os.path.islink(t):
            _mount(libc, ctypes, "tmpfs", t, "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['tmp_bytes']},mode=1777")
    for p, fd in keep.items():
        if any(_under(p, h) for h in hidden):
            os.makedirs(p, exist_ok=True)
            _mount(libc, ctypes, f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
            _mount(libc, ctypes, None, p, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    os.makedirs(spec["workdir"], mode=0o700, exist_ok=True)
    if spec["uid"] is not None:
        os.chown(spec["workdir"], spec["uid"], spec["gid"])
    for h in hidden:
        _mount(libc, ctypes, None, h, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if os.getpid() != 1 and spec["isolate_processes"]:
        try:  # a /proc of our own PID namespace: other processes' command lines disappear
            _mount(libc, ctypes, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError:
            pass


def _relay(status, back_fd=None):
    """Leave with the same wait status as a child: exit code, or the same signal (or report it upward)."""
    if back_fd is not None:
        os.write(back_fd, struct.pack("i", status))
        os._exit(0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def enter_pid_namespace():
    """Returns only in the process that will run the candidate (pid 2 of a new PID namespace) or, when no PID
    namespace can be made, in the original process; returns the failure note ("" on success).

    Host-side process P: unshare(CLONE_NEWPID), fork C, wait, leave with C's relayed status.  C is pid 1 of the
    namespace: it forks D (returned to), reaps every orphan until D ends, and reports D's wait status to P.  When
    C exits the kernel kills and reaps everything left in the namespace (setsid escapees included)."""
    try:
        libc, ctypes = _libc()
    except Exception as exc:  # noqa: BLE001
        return f"pid namespace unavailable: {exc}"
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(CLONE_NEWPID if uid == 0 else CLONE_NEWUSER | CLONE_NEWPID) != 0:
        return f"pid namespace unavailable: {os.strerror(ctypes.get_errno())}"
    if uid != 0:  # map our own ids into the new user namespace, so files we create keep our uid
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
    back_r, back_w = os.pipe()
    c = os.fork()
    if c:  # P
        os.close(back_w)
        os.waitpid(c, 0)
        data = os.read(back_r, 4)
        _relay(struct.unpack("i", data)[0] if len(data) == 4 else 256)
    os.close(back_r)
    d = os.fork()
    if d == 0:  # D
        os.close(back_w)
        return ""
    while True:  # C: the namespace's init
        pid, status = os.wait()
        if pid == d:
            _relay(status, back_w)


def apply_limits(lim):
    """Set each rlimit (soft = hard, CPU hard one second later so SIGXCPU comes first)."""
    wanted = [
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_CPU, lim["cpu_s"], lim["cpu_s"] + 1),
        (resource.RLIMIT_AS, lim["memory_bytes"], lim["memory_bytes"]),
        (resource.RLIMIT_DATA, lim["memory_bytes"], lim["memory_bytes"]),
        (resource.RLIMIT_NPROC, lim["max_processes"], lim["max_processes"]),
        (resource.RLIMIT_FSIZE, lim["max_file_bytes"], lim["max_file_bytes"]),
        (resource.RLIMIT_NOFILE, lim["max_open_files"], lim["max_open_files"]),
    ]
    for res, soft, hard in wanted:
        cur_hard = resource.getrlimit(res)[1]
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        resource.setrlimit(res, (soft, hard))


def confine(spec, pid_note):
    """Steps 2-5; returns the hello record (what worked, and why not where it did not)."""
    root = os.geteuid() == 0
    status = {"pid": not pid_note, "net": False, "fs": False, "dropped": False}
    status["notes"] = [pid_note] if pid_note else []
    libc = ctypes = None
    if spec["isolate_network"] or spec["isolate_filesystem"] or spec["uid"] is not None:
        try:
            libc, ctypes = _libc()
        except Exception as exc:  # noqa: BLE001 - recorded, the flags stay False
            status["notes"].append(f"ctypes unavailable: {exc}")
    if libc is not None and spec["isolate_filesystem"]:  # root, or inside our own user namespace
        try:
            isolate_filesystem(spec, libc, ctypes)
            status["fs"] = True
        except OSError as exc:
            status["notes"].append(f"filesystem isolation failed: {exc}")
            os.makedirs(spec["workdir"], mode=0o700, exist_ok=True)
    if libc is not None and spec["isolate_network"]:
        if libc.unshare(CLONE_NEWNET) == 0 or libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
            status["net"] = True
        else:
            status["notes"].append(f"network namespace unavailable: {os.strerror(ctypes.get_errno())}")
    apply_limits(spec["limits"])
    if spec["uid"] is not None and root and _paths_world_readable(sys.path):
        os.setgroups([])
        os.setresgid(spec["gid"], spec["gid"], spec["gid"])
        os.setresuid(spec["uid"], spec["uid"], spec["uid"])
        status["dropped"] = os.getuid() == spec["uid"] and os.geteuid() == spec["uid"]
    elif spec["uid"] is not None:
        status["notes"].append("privileges kept: not root, or the interpreter's files would be unreadable")
    if libc is not None:
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    os.chdir(spec["workdir"])
    os.umask(0o077)
    return status


def _paths_world_readable(paths):
    """True when every existing directory in `paths` (and each ancestor) is readable by any user."""
    for path in paths:
        if not os.path.isdir(path):
            continue
        probe = os.path.abspath(path)
        while True:
            if not os.stat(probe).st_mode & 0o005 == 0o005:
                return False
            if probe == "/":
                break
            probe = os.path.dirname(probe)
    return True


def _restore_builtins():
    current = builtins.__dict__
    for name in [n for n in current if n not in _BUILTINS]:
        del current[name]
    current.update(_BUILTINS)


def _print_exception(exc, err):
    """The usual traceback on stderr (imported late: it is only cosmetic, and costs start-up time)."""
    try:
        import traceback

        traceback.print_exception(exc, file=err)
    except BaseException:  # noqa: BLE001, S110 - a hostile exception or stream
        pass


def _run_stage(stage, code, ns, send, err):
    """Exec one stage; on failure send a stage record and return the process exit code, else None."""
    try:
        exec(code, ns)  # noqa: S102 - this is the sandboxed child
        return None
    except BaseException as exc:  # noqa: BLE001 - SystemExit / KeyboardInterrupt from the candidate included
        rc = 1
        if _type(exc) is SystemExit:
            rc = exc.code if _type(exc.code) is int else (0 if exc.code is None else 1)
        else:
            _print_exception(exc, err)
        send({"stage": stage, **_describe(exc)})
        return rc


def run(spec, send, modules):
    """Steps 7-8; returns the exit code."""
    err = sys.stderr
    ns = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        code = compile(spec["source"], "<candidate>", "exec", dont_inherit=True)
    except BaseException as exc:  # noqa: BLE001 - SyntaxError, MemoryError, RecursionError, ...
        _print_exception(exc, err)
        send({"stage": "compile", **_describe(exc)})
        return 1
    rc = _run_stage("exec", code, ns, send, err)
    _restore_builtins()
    if rc is None and spec["setup"].strip():
        rc = _run_stage("setup", compile(spec["setup"], "<setup>", "exec", dont_inherit=True), ns, send, err)
    if rc is not None:
        return rc
    for i, src in enumerate(spec["expressions"]):
        _restore_builtins()
        g = dict(ns)
        g["__builtins__"] = builtins
        for name in spec["trusted_names"]:
            g.pop(name, None) if name in _BUILTINS else g.__setitem__(name, modules[name])
        try:
            value = eval(compile(src, f"<expression {i}>", "eval", dont_inherit=True), g)  # noqa: S307
        except BaseException as exc:  # noqa: BLE001
            send({"i": i, **_describe(exc)})
            continue
        try:
            send({"i": i, "v": encode(value)})
        except Unverifiable as exc:
            send({"i": i, "unverifiable": str(exc)})
        except BaseException as exc:  # noqa: BLE001 - e.g. a hostile object raising while being walked
            send({"i": i, "unverifiable": f"encoding failed: {_describe(exc)['exc']}"})
    send({"done": len(spec["expressions"])})
    return 0


def main():
    path = sys.argv[1]
    with open(path, "rb") as fh:
        spec = marshal.loads(fh.read())
    os.unlink(path)
    modules = {}
    for name in spec["trusted_names"]:
        if name not in _BUILTINS:
            try:
                modules[name] = __import__(name)
            except ImportError:
                modules[name] = None
    pid_note = enter_pid_namespace() if spec["isolate_processes"] else "pid namespace not requested"
    send = make_sender(spec["channel_fd"])
    send({"hello": confine(spec, pid_note)})
    out, err = sys.stdout, sys.stderr
    rc = run(spec, send, modules)
    for stream in (sys.stdout, sys.stderr, out, err):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a replaced or closed stream
            pass
    os._exit(rc if 0 <= rc <= 255 else 1)


if __name__ == "__main__":
    main()
