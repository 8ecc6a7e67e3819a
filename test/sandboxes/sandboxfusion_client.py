"""A SandboxFusion client written only from its published API (RunCodeRequest/RunCodeResponse of
POST /run_code), with nothing but the Python standard library. Run by test/sandboxes/compat.test.ts
against triad's sandbox: `python3 sandboxfusion_client.py http://127.0.0.1:PORT`. Prints one JSON
object with what each case got and exits 0 when every case has SandboxFusion's fields and statuses.
"""
import base64
import json
import sys
import urllib.request

URL = sys.argv[1].rstrip('/')
RESPONSE_FIELDS = {'status', 'message', 'compile_result', 'run_result', 'files'}
RESULT_FIELDS = {'status', 'execution_time', 'return_code', 'stdout', 'stderr'}
RUN_STATUSES = {'Success', 'Failed', 'SandboxError'}
COMMAND_STATUSES = {'Finished', 'Error', 'TimeLimitExceeded'}


def run_code(**request):
    body = json.dumps(request).encode()
    req = urllib.request.Request(URL + '/run_code', data=body, headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(req, timeout=60) as res:
        return json.loads(res.read())


def check_shape(resp):
    missing = RESPONSE_FIELDS - set(resp)
    assert not missing, 'response lacks %s' % missing
    assert resp['status'] in RUN_STATUSES, resp['status']
    for key in ('compile_result', 'run_result'):
        r = resp[key]
        if r is not None:
            assert RESULT_FIELDS <= set(r), '%s lacks %s' % (key, RESULT_FIELDS - set(r))
            assert r['status'] in COMMAND_STATUSES, r['status']
    assert isinstance(resp['files'], dict)


cases = {}
failures = []


def case(name, expect_status, **request):
    resp = run_code(**request)
    check_shape(resp)
    cases[name] = resp
    if resp['status'] != expect_status:
        failures.append('%s: status %s, expected %s' % (name, resp['status'], expect_status))
    return resp


r = case('hello', 'Success', code='print("hello")', language='python')
if r['run_result']['stdout'] != 'hello\n' or r['run_result']['return_code'] != 0:
    failures.append('hello: %r' % r['run_result'])
r = case('stdin', 'Success', code='read x; echo "got $x"', language='bash', stdin='42\n')
if r['run_result']['stdout'] != 'got 42\n':
    failures.append('stdin: %r' % r['run_result'])
case('exit 1', 'Failed', code='import sys; sys.exit(1)', language='python')
r = case('timeout', 'Failed', code='while True: pass', language='python', run_timeout=1)
if r['run_result']['status'] != 'TimeLimitExceeded':
    failures.append('timeout: %r' % r['run_result']['status'])
r = case(
    'files',
    'Success',
    code='open("b.txt", "w").write(open("a.txt").read() * 2)',
    language='python',
    files={'a.txt': base64.b64encode(b'ab').decode()},
    fetch_files=['b.txt'],
    memory_limit_MB=-1,
    compile_timeout=10,
)
if base64.b64decode(r['files'].get('b.txt', '')) != b'abab':
    failures.append('files: %r' % r['files'])
r = case('compile error', 'Failed', code='int main() { return nope; }', language='cpp')
if r['compile_result'] is None or r['compile_result']['return_code'] == 0 or r['run_result'] is not None:
    failures.append('compile error: %r' % r)
case('nodejs', 'Success', code='console.log(1 + 1)', language='nodejs')

print(json.dumps({'failures': failures, 'statuses': {k: v['status'] for k, v in cases.items()}}))
sys.exit(1 if failures else 0)
