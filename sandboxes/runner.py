# The in-sandbox job runner of triad's code sandbox (docker and local backends alike).
#
# Runs as uid 0 with only CAP_SETUID, CAP_SETGID and CAP_KILL inside the sandbox (its own PID
# namespace); the user's code runs as an unprivileged uid, so it can neither signal nor trace the
# runner. Reads one job as JSON on stdin, writes one result as JSON on stdout:
#   job:    {workdir, uid, gid, source, code, stdin, files, fetch_files, compile, run,
#            compile_timeout, run_timeout (s), output_limit (bytes per stream), fetch_limit (bytes),
#            rlimits: {name: value}, env, cleanup: [dirs]}
#   result: {compile, run, files, breaches: [..], notes: [..]}  or  {error: "..."}
# Each command result is {status, execution_time, return_code, stdout, stderr} as SandboxFusion's.
# Standard library only; started as `python3 -I -S -c <this file>`.
import binascii
import ctypes
import json
import os
import resource
import selectors
import shutil
import signal
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


def become_user(job):
    if job['uid'] < 0:
        return  # the server cannot switch users (not root): run as itself
    os.setgroups([])
    os.setgid(job['gid'])
    os.setuid(job['uid'])


def as_user(job, fn):
    """Runs fn() in a child process as the job's user; returns what fn returns (JSON-able)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            become_user(job)
            out = json.dumps({'ok': fn()}).encode()
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = json.dumps({'err': '%s: %s' % (type(e).__name__, e)}).encode()
            code = 1
        try:
            view = memoryview(out)
            while view:
                n = os.write(w, view)
                view = view[n:]
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    reply = json.loads(b''.join(chunks) or b'{"err": "helper died"}')
    if 'err' in reply:
        raise RuntimeError(reply['err'])
    return reply['ok']


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
    me = os.getpid()
    pids = []
    for n in os.listdir('/proc'):
        if n.isdigit() and int(n) not in (1, me):
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


def kill_all():
    """Kills every process of the job but PID 1 and this runner; True when none is left."""
    if KILL_MODE == 'group':
        reap()
        return True
    for _ in range(50):
        if KILL_MODE == 'all':
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        else:
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


def run_command(job, argv, timeout, stdin_text, breaches):
    limits = job['rlimits']

    def limit():
        for name, value in limits.items():
            resource.setrlimit(RLIMITS[name], (value, value))

    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=job['workdir'],
            env=job['env'],
            stdin=subprocess.PIPE if stdin_text else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **({'user': job['uid'], 'group': job['gid'], 'extra_groups': []} if job['uid'] >= 0 else {}),
            start_new_session=True,
            preexec_fn=limit,
            close_fds=True,
        )
    except OSError as e:
        return {'status': 'Finished', 'execution_time': 0.0, 'return_code': 127, 'stdout': '',
                'stderr': 'cannot start %s: %s\n' % (argv[0], e.strerror)}
    deadline = t0 + timeout
    cap = job['output_limit']
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    sel = selectors.DefaultSelector()
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    pending = memoryview(stdin_text.encode('utf-8')) if stdin_text else None
    if pending is not None:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
    pidfd = os.pidfd_open(proc.pid)
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
            if pending is not None and fd == proc.stdin.fileno():
                try:
                    n = os.write(fd, pending[:65536])
                    pending = pending[n:]
                except (BrokenPipeError, BlockingIOError) as e:
                    if isinstance(e, BlockingIOError):
                        continue
                    pending = pending[:0]
                if not pending:
                    sel.unregister(fd)
                    proc.stdin.close()
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
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0) + 0.5 if not (timed_out or over) else 5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        timed_out = True
    elapsed = time.monotonic() - t0
    os.close(pidfd)
    sel.close()
    for f in (proc.stdout, proc.stderr, proc.stdin):
        if f is not None and not f.closed:
            try:
                f.close()
            except OSError:
                pass
    if over:
        breaches.append('output_limit')
    if timed_out:
        breaches.append('time_limit')
    elif proc.returncode < 0:
        breaches.append('signal')
    return {
        'status': 'TimeLimitExceeded' if timed_out else 'Finished',
        'execution_time': round(elapsed, 6),
        'return_code': None if timed_out else proc.returncode,
        'stdout': decode(bytes(bufs[out_fd])),
        'stderr': decode(bytes(bufs[err_fd])),
    }


def main(job):
    global KILL_MODE, JOB_UID
    KILL_MODE = job.get('kill_mode', 'all')
    JOB_UID = job['uid']
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    breaches = []
    notes = []
    result = {'compile': None, 'run': None, 'files': {}, 'breaches': breaches, 'notes': notes}
    setup(job)
    ok = True
    if job['compile']:
        c = run_command(job, job['compile'], job['compile_timeout'], None, breaches)
        result['compile'] = c
        if not kill_all():
            breaches.append('leftover_processes')
        ok = c['status'] == 'Finished' and c['return_code'] == 0
        if 'output_limit' in breaches:
            notes.append('compile output over the limit of %d bytes: cut, compiler killed' % job['output_limit'])
    if ok:
        r = run_command(job, job['run'], job['run_timeout'], job['stdin'], breaches)
        result['run'] = r
        if not kill_all():
            breaches.append('leftover_processes')
        if 'output_limit' in breaches:
            notes.append('output over the limit of %d bytes per stream: cut, program killed' % job['output_limit'])
    if job['fetch_files']:
        got = fetch(job)
        result['files'] = got['files']
        notes.extend(got['notes'])
    if job['cleanup']:
        left = cleanup(job)
        if left:
            breaches.append('cleanup_failed')
            notes.append('could not remove %d leftover files' % len(left))
    if not kill_all():
        breaches.append('leftover_processes')
    return result


def answer(job):
    try:
        return main(job)
    except BaseException as e:  # noqa: BLE001 - reported to the host as a sandbox error
        return {'error': '%s: %s' % (type(e).__name__, e)}


def serve():
    """Warm mode: one JSON job per line on stdin, one JSON result per line on stdout, until EOF."""
    out = sys.stdout
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return
        try:
            job = json.loads(line)
        except ValueError as e:
            res = {'error': 'bad job line: %s' % e}
        else:
            res = answer(job)
        out.write(json.dumps(res) + '\n')
        out.flush()


if __name__ == '__main__':
    if sys.argv[1:] == ['serve']:
        serve()
    else:
        sys.stdout.write(json.dumps(answer(json.loads(sys.stdin.buffer.read()))))
        sys.stdout.flush()
