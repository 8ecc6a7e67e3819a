# The in-sandbox job runner of triad's code sandbox (docker and local backends alike).
#
# Runs as uid 0 with only CAP_SETUID, CAP_SETGID and CAP_KILL inside the sandbox (its own PID
# namespace); the user's code runs as an unprivileged uid, so it can neither signal nor trace the
# runner. Reads one job as JSON on stdin, writes one result as JSON on stdout:
#   job:    {workdir, uid, gid, source, code, stdin, files, fetch_files, compile, run,
#            compile_timeout, run_timeout (s), output_limit (bytes per stream), fetch_limit (bytes),
#            rlimits: {name: value}, env, cleanup: [dirs], kill_mode, fork (run through the fork
#            server), ipc_cleanup (remove the job user's System V objects and /dev/mqueue entries),
#            oom_file (the memory cgroup's memory.oom_control, or null)}
#   result: {compile, run, files, breaches: [..], notes: [..]}  or  {error: "..."}
# Each command result is {status, execution_time, return_code, stdout, stderr} as SandboxFusion's.
# Standard library only; started as `python3 -I -S -c <this file>`, or
# `python3 -I -S -c <this file> serve [--connect SOCKET] [--fork-env JSON] [FORK_SERVER_SOURCE]` for
# a warm slot (see serve and fork-server.py).
import binascii
import ctypes
import json
import os
import resource
import select
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
RLIMITS = {
    'nproc': resource.RLIMIT_NPROC,
    'nofile': resource.RLIMIT_NOFILE,
    'fsize': resource.RLIMIT_FSIZE,
    'core': resource.RLIMIT_CORE,
    'cpu': resource.RLIMIT_CPU,
    'as': resource.RLIMIT_AS,
}


def as_user(job, fn):
    """Runs fn() with the job's user as effective uid and gid (the real and saved ones stay 0, so no
    job process may signal or trace the runner meanwhile) and returns what fn returns. No fork: file
    and IPC permission checks follow the effective ids; capabilities are dropped until it returns."""
    if job['uid'] < 0:
        return fn()
    os.setegid(job['gid'])
    os.seteuid(job['uid'])
    try:
        return fn()
    finally:
        os.seteuid(0)
        os.setegid(0)


def safe_path(workdir, rel):
    if not isinstance(rel, str) or rel == '' or rel.startswith('/') or '\0' in rel:
        raise ValueError('bad path %r' % (rel,))
    parts = [p for p in rel.split('/') if p not in ('', '.')]
    if not parts or '..' in parts:
        raise ValueError('bad path %r' % (rel,))
    return os.path.join(workdir, *parts)


def setup(job):
    def write():
        wd = job['workdir']
        for rel, b64 in job['files'].items():
            path = safe_path(wd, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'wb') as f:
                f.write(binascii.a2b_base64(b64 or ''))
        with open(os.path.join(wd, job['source']), 'w', encoding='utf-8') as f:
            f.write(job['code'])
        return True

    as_user(job, write)


def fetch(job):
    def read():
        out = {}
        budget = job['fetch_limit']
        notes = []
        for rel in job['fetch_files']:
            try:
                path = safe_path(job['workdir'], rel)
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except (OSError, ValueError):
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    notes.append('fetch %s: not a regular file' % rel)
                    continue
                if st.st_size > budget:
                    notes.append('fetch %s: over the fetch limit of %d bytes' % (rel, job['fetch_limit']))
                    continue
                data = os.read(fd, st.st_size + 1)
                budget -= len(data)
                out[rel] = binascii.b2a_base64(data, newline=False).decode()
            finally:
                os.close(fd)
        return {'files': out, 'notes': notes}

    return as_user(job, read)


IPC_RMID = 0
SYSV = (('shm', 'shmctl'), ('sem', 'semctl'), ('msg', 'msgctl'))


def remove_ipc(uid):
    """Removes the System V objects of `uid` (creator or owner) and every /dev/mqueue entry it may
    unlink; runs as the job's user. Returns the ones left."""
    libc = ctypes.CDLL(None, use_errno=True)
    left = []
    for kind, ctl in SYSV:
        try:
            with open('/proc/sysvipc/%s' % kind) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            # key id perms ... uid gid cuid cgid ... (uid is column 7 for shm, 4 for sem and msg)
            ident = int(cols[1])
            uids = {int(cols[7]), int(cols[9])} if kind == 'shm' else (
                {int(cols[4]), int(cols[6])} if kind == 'sem' else {int(cols[7]), int(cols[9])})
            if uid not in uids:
                continue
            fn = getattr(libc, ctl)
            rc = fn(ident, 0, IPC_RMID, None) if kind == 'sem' else fn(ident, IPC_RMID, None)
            if rc != 0:
                left.append('%s %d' % (kind, ident))
    try:
        names = os.listdir('/dev/mqueue')
    except OSError:
        names = []
    for n in names:
        try:
            os.unlink(os.path.join('/dev/mqueue', n))
        except OSError:
            left.append('/dev/mqueue/%s' % n)
    return left


def cleanup(job):
    def wipe():
        left = []
        for d in job['cleanup']:
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for n in names:
                p = os.path.join(d, n)
                try:
                    if os.path.isdir(p) and not os.path.islink(p):
                        for root, dirs, _ in os.walk(p):
                            for x in dirs:
                                try:
                                    os.chmod(os.path.join(root, x), 0o700)
                                except OSError:
                                    pass
                        shutil.rmtree(p)
                    else:
                        os.unlink(p)
                except OSError:
                    left.append(p)
        if job.get('ipc_cleanup'):
            left.extend(remove_ipc(job['uid']))
        return left

    return as_user(job, wipe)


KILL_MODE = 'all'  # 'all': own PID namespace; 'uid': the job's uid only; 'group': process groups only
JOB_UID = -1


def uid_of(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('Uid:'):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def others():
    """Processes of the job: in 'all' mode every process but PID 1, this runner and its fork
    server; in 'uid' mode those of the job's uid."""
    keep = {1, os.getpid()}
    if FORK is not None and FORK.pid is not None:
        keep.add(FORK.pid)
    pids = []
    for n in os.listdir('/proc'):
        if n.isdigit() and int(n) not in keep:
            pid = int(n)
            if KILL_MODE == 'all' or (KILL_MODE == 'uid' and uid_of(pid) == JOB_UID):
                pids.append(pid)
    return pids


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_as_user():
    """kill(-1, SIGKILL) from a child running as the job's user: one atomic sweep of every process
    that user may signal (a fork bomb cannot outrun it); spares the root runner and fork server."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(JOB_UID)
            os.setuid(JOB_UID)
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def kill_all():
    """Kills every process of the job but PID 1, this runner and its fork server; True when none is
    left."""
    if KILL_MODE == 'group':
        reap()
        return True
    reap()
    if not others():
        return True
    for _ in range(50):
        if JOB_UID >= 0:
            kill_as_user()
        for pid in others():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        reap()
        if not others():
            return True
        time.sleep(0.002)
        reap()
    return not others()


def decode(b):
    return b.decode('utf-8', 'replace')


class ForkServerLost(Exception):
    """The fork server died or did not answer in time."""


# The fork server's interpreter flags: no user site (-s), no PYTHON* variables (-E); with its HOME
# a path nobody may create, so it loads nothing a job could have written (see fork-server.py).
FORK_SERVER_FLAGS = ['-s', '-E']
FORK_SERVER_HOME = '/nonexistent'


class ForkServer:
    """The runner's end of fork-server.py: started on the first python job, restarted when lost."""

    START_S = 10.0
    REPLY_S = 2.0

    def __init__(self, source):
        self.source = source
        self.proc = None
        self.sock = None
        self.pid = None
        self.env = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def ensure(self, env):
        if self.alive() and self.env == env:
            return
        if self.proc is not None and not self.alive():
            raise ForkServerLost('the fork server had exited')
        self.stop()
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                ['/usr/bin/python3', *FORK_SERVER_FLAGS, '-c', self.source, str(b.fileno())],
                env=dict(env, HOME=FORK_SERVER_HOME), cwd='/', stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                pass_fds=[b.fileno()], start_new_session=True)
        finally:
            b.close()
        self.sock, self.pid, self.env = a, self.proc.pid, env
        if self.recv(self.START_S) != {'ready': True}:
            raise ForkServerLost('the fork server did not start')

    def recv(self, timeout, fds=None):
        """One message; the fds that came with it are appended to `fds` (others are closed)."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            raise ForkServerLost('the fork server did not answer in %.1f s' % timeout)
        data, got, _, _ = socket.recv_fds(self.sock, 1 << 16, 1)
        if fds is None:
            for f in got:
                os.close(f)
        else:
            fds.extend(got)
        if not data:
            raise ForkServerLost('the fork server exited')
        return json.loads(data)

    def fork(self, request, fds):
        """Sends one request with its fds; returns the child's pid and pidfd."""
        try:
            socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
        except OSError as e:
            raise ForkServerLost('the fork server is gone: %s' % e.strerror)
        got = []
        reply = self.recv(self.REPLY_S, got)
        if 'pid' not in reply or len(got) != 1:
            for f in got:
                os.close(f)
            raise ForkServerLost('the fork server answered %r' % (reply,))
        return reply['pid'], got[0]

    def stop(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self.proc.kill()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, ChildProcessError):
                pass
        if self.sock is not None:
            self.sock.close()
        self.proc = self.sock = self.pid = self.env = None


FORK = None  # the slot's ForkServer in warm mode with a fork server source, else None


class Spawned:
    """A command started with subprocess (the spawn path)."""

    def __init__(self, job, argv, with_stdin):
        limits = job['rlimits']

        def limit():
            # before the user switch: a process that changed its uid may no longer write its /proc
            with open('/proc/self/oom_score_adj', 'w') as f:
                f.write('1000')
            for name, value in limits.items():
                resource.setrlimit(RLIMITS[name], (value, value))
            if job['uid'] >= 0:
                os.setgroups([])
                os.setgid(job['gid'])
                os.setuid(job['uid'])

        self.proc = subprocess.Popen(
            argv,
            cwd=job['workdir'],
            env=job['env'],
            stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,  # its own group, which kill_all kills (setsid would also make a scheduler autogroup)
            preexec_fn=limit,
            close_fds=True,
        )
        self.pid = self.proc.pid
        self.stdin = self.proc.stdin.fileno() if with_stdin else None
        self.stdout = self.proc.stdout.fileno()
        self.stderr = self.proc.stderr.fileno()

    def wait(self, timeout):
        """The return code (negative: killed by that signal). @raises subprocess.TimeoutExpired"""
        return self.proc.wait(timeout=timeout)

    def close_stdin(self):
        self.proc.stdin.close()

    def close(self):
        for f in (self.proc.stdout, self.proc.stderr, self.proc.stdin):
            if f is not None and not f.closed:
                try:
                    f.close()
                except OSError:
                    pass


class Forked:
    """A python program forked by the slot's fork server (the fork path)."""

    def __init__(self, job, with_stdin):
        fds_child = []
        mine = []
        if with_stdin:
            r, w = os.pipe()
            fds_child.append(r)
            mine.append(w)
        else:
            fds_child.append(os.open('/dev/null', os.O_RDONLY))
            mine.append(None)
        for _ in range(2):
            r, w = os.pipe()
            fds_child.append(w)
            mine.append(r)
        request = {k: job[k] for k in ('workdir', 'uid', 'gid', 'source', 'rlimits', 'env')}
        try:
            FORK.ensure(job['env'])
            self.pid, self.pidfd = FORK.fork(request, fds_child)
        except BaseException:
            for f in mine:
                if f is not None:
                    os.close(f)
            raise
        finally:
            for f in fds_child:
                os.close(f)
        self.stdin, self.stdout, self.stderr = mine
        self.code = None

    def wait(self, timeout):
        if self.code is None:
            try:
                status = FORK.recv(timeout)['status']
            except ForkServerLost as e:
                if 'did not answer' in str(e):
                    raise subprocess.TimeoutExpired('fork server', timeout)
                # the server died: its child is now this runner's (the subreaper's) to reap
                try:
                    _, status = os.waitpid(self.pid, 0)
                except ChildProcessError:
                    status = signal.SIGKILL
                BREACHES.append('fork_server_lost')
            self.code = os.waitstatus_to_exitcode(status)
        return self.code

    def close_stdin(self):
        os.close(self.stdin)
        self.stdin = None

    def close(self):
        for f in (self.stdin, self.stdout, self.stderr):
            if f is not None:
                try:
                    os.close(f)
                except OSError:
                    pass


BREACHES = []  # the breaches of the job in progress


def start(job, argv, with_stdin, fork, notes):
    """Starts a command on the fork path when asked and possible, else on the spawn path."""
    if fork and FORK is not None:
        try:
            return Forked(job, with_stdin)
        except (ForkServerLost, OSError) as e:
            FORK.stop()
            BREACHES.append('fork_server_lost')
            notes.append('%s; the program was spawned instead' % e)
    return Spawned(job, argv, with_stdin)


def oom_kills(job):
    """Processes the memory cgroup has killed so far (memory.oom_control's oom_kill), or None."""
    path = job.get('oom_file')
    if not path:
        return None
    try:
        with open(path) as f:
            for line in f:
                if line.startswith('oom_kill '):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run_command(job, argv, timeout, stdin_text, breaches, notes, fork=False, what='run'):
    oom_before = oom_kills(job)
    t0 = time.monotonic()
    try:
        child = start(job, argv, bool(stdin_text), fork, notes)
    except OSError as e:
        return {'status': 'Finished', 'execution_time': 0.0, 'return_code': 127, 'stdout': '',
                'stderr': 'cannot start %s: %s\n' % (argv[0], e.strerror)}
    deadline = t0 + timeout
    cap = job['output_limit']
    out_fd, err_fd = child.stdout, child.stderr
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    sel = selectors.DefaultSelector()
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    pending = memoryview(stdin_text.encode('utf-8')) if stdin_text else None
    if pending is not None:
        os.set_blocking(child.stdin, False)
        sel.register(child.stdin, selectors.EVENT_WRITE)
    # the fork path's pidfd comes from the fork server (it reaps the child, maybe before now)
    pidfd = child.pidfd if isinstance(child, Forked) else os.pidfd_open(child.pid)
    sel.register(pidfd, selectors.EVENT_READ)
    timed_out = False
    over = False
    exited_at = None
    open_out = len(bufs)
    while open_out > 0:
        now = time.monotonic()
        if exited_at is None and now >= deadline:
            timed_out = True
            break
        if exited_at is not None and now >= exited_at + 0.05:
            break  # the program exited; a background child holds the pipes open: stop here
        wait = (deadline if exited_at is None else exited_at + 0.05) - now
        for key, _ in sel.select(max(wait, 0)):
            fd = key.fd
            if fd == pidfd:
                sel.unregister(pidfd)
                exited_at = time.monotonic()
                continue
            if pending is not None and fd == child.stdin:
                try:
                    n = os.write(fd, pending[:65536])
                    pending = pending[n:]
                except (BrokenPipeError, BlockingIOError) as e:
                    if isinstance(e, BlockingIOError):
                        continue
                    pending = pending[:0]
                if not pending:
                    sel.unregister(fd)
                    child.close_stdin()
                    pending = None
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                sel.unregister(fd)
                open_out -= 1
                continue
            buf = bufs[fd]
            room = cap - len(buf)
            buf += chunk[:max(room, 0)]
            if len(chunk) > room:
                over = True
        if over:
            break
    if timed_out or over or (exited_at is not None and open_out > 0):
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        code = child.wait(max(deadline - time.monotonic(), 0) + 0.5 if not (timed_out or over) else 5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        code = child.wait(10)
        timed_out = True
    elapsed = time.monotonic() - t0
    os.close(pidfd)
    sel.close()
    child.close()
    if over:
        breaches.append('output_limit')
    if timed_out:
        breaches.append('time_limit')
    elif code < 0:
        breaches.append('signal')
    oom_after = oom_kills(job)
    if oom_before is not None and oom_after is not None and oom_after > oom_before:
        breaches.append('memory_limit')
        notes.append('out of memory: the memory limit killed %d process(es) of the %s command (%s)'
                     % (oom_after - oom_before, what, ' '.join(argv)))
    return {
        'status': 'TimeLimitExceeded' if timed_out else 'Finished',
        'execution_time': round(elapsed, 6),
        'return_code': None if timed_out else code,
        'stdout': decode(bytes(bufs[out_fd])),
        'stderr': decode(bytes(bufs[err_fd])),
    }


def main(job):
    global KILL_MODE, JOB_UID
    KILL_MODE = job.get('kill_mode', 'all')
    JOB_UID = job['uid']
    del BREACHES[:]
    breaches = BREACHES
    notes = []
    result = {'compile': None, 'run': None, 'files': {}, 'breaches': breaches, 'notes': notes}
    setup(job)
    ok = True
    if job['compile']:
        c = run_command(job, job['compile'], job['compile_timeout'], None, breaches, notes, what='compile')
        result['compile'] = c
        if not kill_all():
            breaches.append('leftover_processes')
        ok = c['status'] == 'Finished' and c['return_code'] == 0
        if 'output_limit' in breaches:
            notes.append('compile output over the limit of %d bytes: cut, compiler killed' % job['output_limit'])
    if ok:
        r = run_command(job, job['run'], job['run_timeout'], job['stdin'], breaches, notes,
                        fork=bool(job.get('fork')))
        result['run'] = r
        if not kill_all():
            breaches.append('leftover_processes')
        if 'output_limit' in breaches:
            notes.append('output over the limit of %d bytes per stream: cut, program killed' % job['output_limit'])
    if job['fetch_files']:
        got = fetch(job)
        result['files'] = got['files']
        notes.extend(got['notes'])
    if job['cleanup'] or job.get('ipc_cleanup'):
        left = cleanup(job)
        if left:
            breaches.append('cleanup_failed')
            notes.append('could not remove %d leftover files or IPC objects' % len(left))
    if not kill_all():
        breaches.append('leftover_processes')
    result['breaches'] = sorted(set(breaches), key=breaches.index)
    return result


def answer(job):
    try:
        return main(job)
    except BaseException as e:  # noqa: BLE001 - reported to the host as a sandbox error
        return {'error': '%s: %s' % (type(e).__name__, e)}


def serve(args):
    """Warm mode: one JSON job per line, one JSON result per line, until EOF; on stdin and stdout,
    or with `--connect PATH` on a unix stream socket this runner connects to (the docker backend's:
    the host listens there and takes the first connection only). The last of `args`, when given, is
    the fork server's source; with `--fork-env JSON` (the environment of a python job) the fork
    server is started before the first job, so that job does not wait for its interpreter."""
    global FORK
    connect = fork_env = None
    while args[:1] in (['--connect'], ['--fork-env']):
        if args[0] == '--connect':
            connect = args[1]
        else:
            fork_env = json.loads(args[1])
        args = args[2:]
    if args:
        FORK = ForkServer(args[0])
        if fork_env is not None:
            try:
                FORK.ensure(fork_env)
            except (ForkServerLost, OSError):
                FORK.stop()  # the first python job starts it again, or spawns
    if connect is not None:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(connect)
        inp = conn.makefile('rb', buffering=1 << 16)
        fd = conn.fileno()

        def write(data):
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
    else:
        inp = sys.stdin.buffer
        out = sys.stdout.buffer

        def write(data):
            out.write(data)
            out.flush()
    while True:
        line = inp.readline()
        if not line:
            if FORK is not None:
                FORK.stop()
            return
        try:
            job = json.loads(line)
        except ValueError as e:
            res = {'error': 'bad job line: %s' % e}
        else:
            res = answer(job)
        write(json.dumps(res).encode() + b'\n')


if __name__ == '__main__':
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if sys.argv[1:2] == ['serve']:
        serve(sys.argv[2:])
    else:
        sys.stdout.write(json.dumps(answer(json.loads(sys.stdin.buffer.read()))))
        sys.stdout.flush()
