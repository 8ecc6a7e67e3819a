# The python fork server of a warm sandbox slot: one pre-started interpreter that forks a fresh
# child per request, so a request does not pay the interpreter's start-up (about 12 ms of a core).
#
# Started by runner.py as `/usr/bin/python3 -s -E -c <this file> FD`, as root with only CAP_SETUID,
# CAP_SETGID and CAP_KILL, in the sandbox's namespaces, with the job's environment but HOME
# /nonexistent. It loads nothing a job could write: no user site (-s; a job could write one under its
# HOME, /tmp), no PYTHON* variable (-E), no '' (the current folder) on sys.path; site and the system's
# paths (/usr, read-only) as `python3 main.py` has them. So a program sees sys.flags.no_user_site and
# ignore_environment set, where `python3 main.py` has them clear.
# FD is one end of a SOCK_SEQPACKET socket pair; messages are JSON, one per packet:
#   server -> runner: {"ready": true} once, then per request {"pid": P} with the child's pidfd
#                     (SCM_RIGHTS) after the fork, and {"status": S} (the raw wait status) when the
#                     child is reaped.
#   runner -> server: a request {workdir, uid, gid, source, rlimits, env} with SCM_RIGHTS fds
#                     [stdin, stdout, stderr].
# The child: a process group of its own, parent-death signal, the job's rlimits, oom_score_adj 1000 (the memory
# limit kills the job's processes before the runner or this server), the job's fds, work dir, user,
# environment; then every module this server imported beyond the interpreter's own start-up is
# dropped from sys.modules and main.py runs as `__main__`; it ends as the interpreter ends, without
# the tear-down of every module (see leave). Nothing a child does reaches this
# process: it only forks and reaps. The interpreter's hash seed is this server's, shared by the
# requests it serves (a slot's server lives at most `recycleAfter` requests).
import sys

BASE_MODULES = frozenset(sys.modules)
if sys.path and sys.path[0] == '':
    del sys.path[0]  # `-c` puts the current folder first; each child puts its work dir there

import atexit  # noqa: E402
import ctypes  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import socket  # noqa: E402

PR_SET_PDEATHSIG = 1
PRCTL = ctypes.CDLL(None).prctl  # resolved once: a child does not dlopen
RLIMITS = {
    'nproc': resource.RLIMIT_NPROC,
    'nofile': resource.RLIMIT_NOFILE,
    'fsize': resource.RLIMIT_FSIZE,
    'core': resource.RLIMIT_CORE,
    'cpu': resource.RLIMIT_CPU,
    'as': resource.RLIMIT_AS,
}
SERVER_MODULES = []  # in a child: the modules this server imported, out of sys.modules


def serve(fd):
    """Answers requests until the runner closes its end; returns (job, fds) in each child."""
    sock = socket.socket(fileno=fd)
    me = os.getpid()
    sock.send(b'{"ready": true}')
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        job = json.loads(msg)
        pid = os.fork()
        if pid == 0:
            sock.close()
            PRCTL(PR_SET_PDEATHSIG, 9, 0, 0, 0)
            if os.getppid() != me:
                os._exit(1)  # this server died between the fork and the prctl
            return job, fds
        for f in fds:
            os.close(f)
        # a pidfd, opened before this server can reap the child: the runner waits on it race-free
        pidfd = os.pidfd_open(pid)
        socket.send_fds(sock, [json.dumps({'pid': pid}).encode()], [pidfd])
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        sock.send(json.dumps({'status': status}).encode())


def become(job, fds):
    """Turns this child into the job's process (limits, fds, work dir, user, environment)."""
    # a process group of its own, which the runner kills; not setsid, which also makes a scheduler
    # autogroup (0.6 ms); there is no terminal to leave (this server has none)
    os.setpgid(0, 0)
    for name, value in job['rlimits'].items():
        resource.setrlimit(RLIMITS[name], (value, value))
    f = os.open('/proc/self/oom_score_adj', os.O_WRONLY)
    os.write(f, b'1000')
    os.close(f)
    for target, f in enumerate(fds):
        os.dup2(f, target)
    os.closerange(3, 1 << 16)
    os.chdir(job['workdir'])
    if job['uid'] >= 0:
        os.setgroups([])
        os.setgid(job['gid'])
        os.setuid(job['uid'])
    # the job's environment; each putenv costs, so only what differs from this server's (HOME)
    for name in [n for n in os.environ if n not in job['env']]:
        del os.environ[name]
    for name, value in job['env'].items():
        if os.environ.get(name) != value:
            os.environ[name] = value
    path = os.path.join(job['workdir'], job['source'])
    sys.argv = [job['source']]
    sys.orig_argv = ['/usr/bin/python3', job['source']]
    sys.path.insert(0, job['workdir'])
    # out of sys.modules, so the program imports its own; kept referenced in this child, so none is
    # torn down here (freeing their objects would write to, and copy, pages shared with the server)
    global SERVER_MODULES
    SERVER_MODULES = [sys.modules.pop(m) for m in [m for m in sys.modules if m not in BASE_MODULES]]
    return path


def run_main(path):
    """Runs the file at `path` as `__main__`, as `python3 path` does."""
    main = type(sys)('__main__')
    main.__file__ = path
    main.__builtins__ = __builtins__
    main.__cached__ = None
    sys.modules['__main__'] = main
    code = compile(read_file(path), path, 'exec')
    exec(code, main.__dict__)


def read_file(path):
    """The bytes of the file at `path` (os-level: no io objects to build in the child)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b''.join(parts)
            parts.append(b)
    finally:
        os.close(fd)


def warm_up():
    """Does once here what each child would otherwise do first: the compiler's first use in a
    process costs about 1 ms (its caches and arenas), against 0.2 ms after; forked children inherit
    it warm."""
    source = (
        b'import sys\n'
        b'def f(a, *b, c=1, **d):\n'
        b'    return [x for x in a if x] + [{1: 2}.get(1, c)]\n'
        b'class C:\n'
        b'    x: int = 1\n'
        b'try:\n'
        b'    print(f"{f([1], 2)!r} {C.x:>3}", file=sys.stderr if 0 else None)\n'
        b'except Exception as e:\n'
        b'    raise ValueError(str(e)) from e\n'
    )
    compile(source, '<warm-up>', 'exec')


def leave(code, _atexit=atexit, _gc=gc, _exit=os._exit):
    """Ends the child as the interpreter's own exit does (non-daemon threads joined, atexit run,
    the program's objects released so unclosed files are flushed, standard streams flushed), minus
    the tear-down of every module, which costs more than the program itself for a short one. Bound
    at start: the program may have broken sys.modules or the import system."""
    try:
        threading = sys.modules.get('threading')
        if threading is not None:
            threading._shutdown()
        _atexit._run_exitfuncs()
        main = sys.modules.get('__main__')
        if main is not None and (threading is None or threading.active_count() == 1):
            main.__dict__.clear()
        _gc.collect()
    except BaseException:  # noqa: BLE001 - the program broke its own exit: still end
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # noqa: BLE001 - as the interpreter: a failed flush exits with 120
            code = 120
    _exit(code)


def exit_code(e):
    """The exit status of a SystemExit, as the interpreter computes it."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    try:
        print(e.code, file=sys.stderr)
    except Exception:  # noqa: BLE001
        pass
    return 1


warm_up()
gc.freeze()  # objects of start-up are never collected by the children: no copy-on-write for them
JOB, FDS = serve(int(sys.argv[1]))
MAIN_PATH = become(JOB, FDS)
del JOB, FDS, serve, become, warm_up, atexit, ctypes, gc, json, resource, socket
try:
    run_main(MAIN_PATH)
except SystemExit as e:
    leave(exit_code(e))
except BaseException as e:  # noqa: BLE001 - printed as the interpreter prints an uncaught one
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != MAIN_PATH:
        tb = tb.tb_next
    e.__traceback__ = tb  # the excepthook prints the exception's own traceback
    sys.excepthook(type(e), e, tb)
    del e, tb
    leave(1)
leave(0)
