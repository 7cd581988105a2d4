"""Run untrusted Python in a supervised child process: `run_python(source, timeout_s=..., limits=...)`.

Design (cf. openai/human-eval `execution.py`, evalplus `reliability_guard`, nanochat `execution.py`; all three
say they are not security sandboxes): the parent starts `python -I -S -B sandbox_harness.py` in a new session
(its own process group) with a minimal environment (PATH, HOME/TMPDIR = the work dir, LANG; nothing inherited),
stdin from /dev/null, and a pipe as result channel.  The trusted harness confines itself before the candidate
runs (PID, mount and network namespaces, rlimits, a fresh per-run uid: see `sandbox_harness.py`); the parent
enforces the wall clock, reads at most `max_output_bytes` of stdout+stderr and `max_channel_bytes` of results
(killing the child on overflow), kills the whole process group (`os.killpg`) when the child exits or times out,
kills whatever still runs under the per-run uid (`kill(-1)` as that uid), and removes the temporary directory.
A thread may call `run_python`: nothing uses signals, `preexec_fn` or `os.fork` in the calling process.

Threat model: generated code is hostile.  Covered (each has a test in tests/grading/test_sandbox.py):
- infinite loops: killed at the wall-clock bound, also when called from a thread
  (`test_infinite_loop_is_killed_within_budget`, `test_timeout_holds_when_called_from_a_thread`);
- CPU burn is also capped by RLIMIT_CPU (`test_cpu_rlimit_stops_a_busy_child`);
- fork bombs: RLIMIT_NPROC on the per-run uid; no process of that uid survives (`test_fork_bomb_is_contained`);
- processes that escape the group with setsid(): killed with the PID namespace, and by the uid sweep
  (`test_setsid_escapee_is_killed`);
- seeing other processes: /proc is the sandbox's own (`test_proc_shows_only_the_sandbox_processes`);
- memory bombs: RLIMIT_AS/DATA give MemoryError (`test_memory_bomb_is_contained`);
- huge output: at most `max_output_bytes` kept, child killed (`test_huge_output_is_truncated_and_killed`);
- huge files: RLIMIT_FSIZE (`test_file_size_limit_stops_big_writes`); the total written to /tmp, /dev/shm, ...
  is capped by the private tmpfs size;
- deleting files outside the work dir: the child runs as an unprivileged per-run uid, and /tmp is private
  (`test_file_deletion_outside_temp_dir_is_blocked`); the work dir is removed afterwards
  (`test_temp_dir_is_removed_afterwards`);
- reading the benchmark files / repository / home dirs: hidden by empty tmpfs mounts in a private mount
  namespace (`test_hidden_paths_are_unreadable`);
- network: a fresh network namespace with no interfaces up (`test_network_connection_attempt_fails`);
- inherited secrets: the environment is rebuilt from scratch (`test_environment_has_no_inherited_secrets`);
- results: only fresh builtin values come back (`test_expression_values_come_back_as_fresh_builtin_values`),
  records out of order are rejected (`test_channel_records_out_of_order_are_a_protocol_error`), and the
  isolation flags say what held (`test_isolation_flags_match_the_platform`).

Not covered:
- without root: no uid drop and no uid sweep, so the candidate runs as the grading user and may delete that
  user's files outside `hide_paths`/`private_tmp`; PID, mount and network namespaces then come from a user
  namespace where the kernel allows one (checked by hand as `nobody` with the system python, not in the test
  suite, which runs as root here); without one, only rlimits + killpg remain and RLIMIT_NPROC counts every
  process of the user.  The `ExecResult` flags (`processes_isolated`, `network_isolated`,
  `filesystem_isolated`, `privileges_dropped`) and `notes` say what held;
- as root with `isolate_filesystem=False`, privileges are kept when the interpreter's stdlib is not readable by
  other users (here: pyenv under /root, mode 0700) - recorded in `notes`;
- kernel exploits, side channels, reading world-readable files in the system directories left visible
  (`SYSTEM_DIRS`: /etc, /usr, /var, ...), and anything a container or VM boundary would be needed for;
- total memory across a fork bomb is up to max_processes x memory_bytes, plus the tmpfs sizes (no cgroup);
- a run's wall clock includes interpreter start-up (~20-50 ms).
"""

from __future__ import annotations

import itertools
import marshal
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from benchctl.errors import check_range
from benchctl.grading.sandbox_protocol import ChannelReport, Outcome, StageError, parse_channel

HARNESS = Path(__file__).with_name("sandbox_harness.py")
UID_BASE = 1_000_000_000  # per-run uids: UID_BASE + pid * 256 + counter; far above real accounts [our choice]
_counter = itertools.count()
_counter_lock = threading.Lock()


# Top-level directories a Python program needs to run (system libraries, /etc, device and kernel views);
# every other top-level directory (home dirs, /work, /opt, a CI checkout under /check, data mounts, ...) is
# hidden.  /tmp, /var/tmp, /dev/shm and /run/lock become private tmpfs instead (`private_tmp`).
SYSTEM_DIRS = frozenset(
    {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys", "run", "var", "tmp"}
)
ALWAYS_HIDE = ("/root", "/home", "/work", "/srv", "/mnt", "/media", "/opt", "/data")


def default_hide_paths(root: str = "/") -> tuple[str, ...]:
    """Every top-level directory outside `SYSTEM_DIRS`, so benchmark files, the repository and home dirs are out
    of sight wherever they live (a fixed list missed a checkout under /check); `ALWAYS_HIDE` is kept in case
    `root` cannot be listed."""
    try:
        names = os.listdir(root)
    except OSError:
        names = []
    found = {os.path.join(root, n) for n in names if n not in SYSTEM_DIRS}
    return tuple(sorted(found | set(ALWAYS_HIDE)))


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits and isolation switches of one sandboxed run."""

    memory_bytes: int = field(default=1 << 30, metadata={"help": "RLIMIT_AS and RLIMIT_DATA of the child"})
    cpu_s: int | None = field(default=None, metadata={"help": "RLIMIT_CPU seconds; None: ceil(timeout_s) + 1"})
    max_processes: int = field(default=16, metadata={"help": "RLIMIT_NPROC for the per-run uid (threads count)"})
    max_file_bytes: int = field(default=16 << 20, metadata={"help": "RLIMIT_FSIZE: largest file the child may write"})
    max_open_files: int = field(default=64, metadata={"help": "RLIMIT_NOFILE"})
    max_output_bytes: int = field(default=1 << 20, metadata={"help": "stdout+stderr kept; more kills the child"})
    max_channel_bytes: int = field(default=32 << 20, metadata={"help": "result-channel bytes; more kills the child"})
    tmp_bytes: int = field(default=64 << 20, metadata={"help": "size of each private tmpfs (/tmp, /dev/shm, ...)"})
    isolate_network: bool = field(default=True, metadata={"help": "unshare a network namespace (no interfaces)"})
    isolate_filesystem: bool = field(default=True, metadata={"help": "[root] private mount namespace and tmpfs"})
    drop_privileges: bool = field(default=True, metadata={"help": "[root] run the child as a fresh per-run uid"})
    isolate_processes: bool = field(default=True, metadata={"help": "PID namespace: all die with the run"})
    hide_paths: tuple[str, ...] = field(
        default_factory=default_hide_paths,
        metadata={"help": "directories replaced by an empty read-only tmpfs (the interpreter's stdlib stays)"},
    )
    private_tmp: tuple[str, ...] = field(
        default=("/tmp", "/var/tmp", "/dev/shm", "/run/lock"),
        metadata={"help": "world-writable directories replaced by a fresh tmpfs of tmp_bytes"},
    )


@dataclass(frozen=True)
class ExecResult:
    """What one sandboxed run did."""

    returncode: int | None  # exit status; negative = killed by that signal
    stdout: str  # decoded, truncated to max_output_bytes
    stderr: str
    timed_out: bool  # the wall-clock bound was hit
    killed_reason: str  # "" | "timeout" | "output_limit" | "channel_limit"
    output_truncated: bool
    cpu_limit_hit: bool  # ended by SIGXCPU/SIGKILL from RLIMIT_CPU
    memory_limit_hit: bool  # a MemoryError was reported
    processes_isolated: bool  # the child ran in its own PID namespace (all its processes die with it)
    network_isolated: bool  # the child was in its own network namespace
    filesystem_isolated: bool  # private mount namespace: hide_paths hidden, private tmpfs
    privileges_dropped: bool  # the child ran as an unprivileged per-run uid
    duration_s: float
    stage_error: StageError | None = None  # compile/exec/setup failure of the source
    outcomes: tuple[Outcome, ...] = ()  # one per evaluated expression, in order (may be short)
    completed: bool = False  # the harness reported every expression and finished
    protocol_error: str = ""  # the result channel broke the protocol (e.g. forged records)
    notes: tuple[str, ...] = ()  # why an isolation step did not hold
    sandbox_uid: int | None = None  # the per-run uid when privileges were to be dropped (for audits)


def _identity(limits: SandboxLimits) -> tuple[int, int] | None:
    """A uid/gid unique among this machine's live runs, when we are root and may drop privileges."""
    if not limits.drop_privileges or os.geteuid() != 0:
        return None
    with _counter_lock:
        uid = UID_BASE + (os.getpid() % (1 << 22)) * 256 + next(_counter) % 256
    return uid, uid


def _spec(source, setup, expressions, trusted_names, limits, timeout_s, ident, workdir, fd) -> dict:
    lim = {f.name: getattr(limits, f.name) for f in fields(limits)}
    lim["cpu_s"] = limits.cpu_s or int(timeout_s) + 2
    return {
        "source": source,
        "setup": setup,
        "expressions": list(expressions),
        "trusted_names": list(trusted_names),
        "limits": lim,
        "uid": ident[0] if ident else None,
        "gid": ident[1] if ident else None,
        "workdir": workdir,
        "channel_fd": fd,
        "isolate_network": limits.isolate_network,
        "isolate_filesystem": limits.isolate_filesystem,
        "isolate_processes": limits.isolate_processes,
        "hide_paths": list(limits.hide_paths),
        "private_tmp": list(limits.private_tmp),
        "tmp_bytes": limits.tmp_bytes,
    }


def run_python(
    source: str,
    *,
    timeout_s: float,
    limits: SandboxLimits = SandboxLimits(),
    setup: str = "",
    expressions: Sequence[str] = (),
    trusted_names: Sequence[str] = (),
) -> ExecResult:
    """Exec `source` (then `setup`) in a sandboxed child, then evaluate each of `expressions` in the resulting
    namespace and return their values as fresh builtin objects (`ExecResult.outcomes`).  `trusted_names` are
    names in the expressions that must mean the real builtin / stdlib module, whatever the source rebound.
    Never raises for bad `source`; raises BenchctlError for a bad `timeout_s`."""
    check_range("timeout_s", timeout_s, 0, None, low_open=True)
    ident = _identity(limits)
    workdir = tempfile.mkdtemp(prefix="benchctl-sbx-")
    chan_r, chan_w = os.pipe()
    try:
        if ident:
            os.chown(workdir, *ident)
        spec_path = os.path.join(workdir, "spec.marshal")
        spec = _spec(source, setup, expressions, trusted_names, limits, timeout_s, ident, workdir, chan_w)
        with open(os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as fh:
            fh.write(marshal.dumps(spec))
        env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", str(HARNESS), spec_path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(chan_w,),
            start_new_session=True,
            env=env,
            cwd=workdir,
            close_fds=True,
        )
        os.close(chan_w)
        chan_w = -1
        try:
            out, err, chan, killed = _supervise(proc, chan_r, start + timeout_s, limits)
        finally:
            _kill_all(proc, ident)
        duration = time.monotonic() - start
    finally:
        for fd in (chan_r, chan_w):
            if fd >= 0:
                os.close(fd)
        shutil.rmtree(workdir, ignore_errors=True)
    res = _result(proc.returncode, out, err, chan, killed, duration, len(expressions), limits)
    return replace(res, sandbox_uid=ident[0]) if ident else res


def _supervise(proc, chan_r, deadline, limits):
    """Pump stdout/stderr/channel until all close, enforcing the deadline and the byte caps."""
    bufs = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray(), chan_r: bytearray()}
    sel = selectors.DefaultSelector()
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    killed, exited_at = "", None
    try:
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                killed = "timeout"
                break
            if exited_at is None and os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                exited_at = now
                _killpg(proc)  # stragglers (grandchildren) may hold the pipes open
            if exited_at is not None and now - exited_at > 1.0:
                break
            for key, _ in sel.select(timeout=min(0.05, deadline - now)):
                data = os.read(key.fd, 1 << 16)
                if not data:
                    sel.unregister(key.fd)
                bufs[key.fd] += data
            if len(bufs[chan_r]) > limits.max_channel_bytes:
                killed = "channel_limit"
                break
            if len(bufs[proc.stdout.fileno()]) + len(bufs[proc.stderr.fileno()]) > limits.max_output_bytes:
                killed = "output_limit"
                break
        if not killed and exited_at is None:
            while time.monotonic() < deadline and not os.waitid(
                os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT
            ):
                time.sleep(0.01)  # pipes closed (e.g. the child closed fd 1/2) but it still runs
            if time.monotonic() >= deadline:
                killed = "timeout"
    finally:
        sel.close()
    out, err = bufs[proc.stdout.fileno()], bufs[proc.stderr.fileno()]
    return bytes(out), bytes(err), bytes(bufs[chan_r]), killed


def _killpg(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the leader is unreaped until proc.wait(), so the pgid is ours
    except (ProcessLookupError, PermissionError):
        pass


def _kill_all(proc, ident) -> None:
    """SIGKILL the process group, reap the child, then kill whatever still runs under the per-run uid."""
    _killpg(proc)
    proc.wait()
    for stream in (proc.stdout, proc.stderr):
        stream.close()
    if ident:
        _sweep_uid(*ident)


def _pids_of_uid(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status", "rb") as fh:
                    for line in fh:
                        if line.startswith(b"Uid:"):
                            if int(line.split()[1]) == uid:
                                pids.append(int(entry))
                            break
            except (OSError, ValueError, IndexError):
                continue
    return pids


def _sweep_uid(uid: int, gid: int) -> None:
    """kill(-1, SIGKILL) as that uid: one atomic pass over every process it owns (setsid escapees included)."""
    for _ in range(20):
        if not _pids_of_uid(uid):
            return
        subprocess.run(
            ["kill", "-9", "-1"],
            user=uid,
            group=gid,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        time.sleep(0.01)


def _result(rc, out, err, chan, killed, duration, n_expr, limits) -> ExecResult:
    report: ChannelReport = parse_channel(chan, n_expr)
    hello = report.hello
    cap = limits.max_output_bytes
    mem = any(o.exc == "MemoryError" for o in report.outcomes) or b"MemoryError" in err[-4096:]
    mem = mem or (report.stage_error is not None and report.stage_error.exc == "MemoryError")
    return ExecResult(
        returncode=rc,
        stdout=out[:cap].decode("utf-8", "replace"),
        stderr=err[:cap].decode("utf-8", "replace"),
        timed_out=killed == "timeout",
        killed_reason=killed,
        output_truncated=len(out) + len(err) > cap,
        cpu_limit_hit=rc == -signal.SIGXCPU,
        memory_limit_hit=mem,
        processes_isolated=hello.get("pid") is True,
        network_isolated=hello.get("net") is True,
        filesystem_isolated=hello.get("fs") is True,
        privileges_dropped=hello.get("dropped") is True,
        duration_s=duration,
        stage_error=report.stage_error,
        outcomes=report.outcomes,
        completed=report.done,
        protocol_error=report.protocol_error,
        notes=tuple(str(n) for n in hello.get("notes", ())),
    )
