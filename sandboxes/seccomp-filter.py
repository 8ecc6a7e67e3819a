# Writes the local sandbox's seccomp filter as a compiled BPF program (for `bwrap --seccomp FD`) to
# stdout. Built with libseccomp's python bindings (Debian's python3-seccomp). Refuses with EPERM
# what docker's default profile refuses to a process without CAP_SYS_ADMIN: new namespaces
# (unshare, setns, clone with a CLONE_NEW* flag), mounts and the new mount API, keyrings, kernel
# modules, kexec, bpf, perf events, userfaultfd, io_uring, handles to host files, clock and swap
# and reboot and quota controls, accounting, and the obsolete calls; clone3 gets ENOSYS (as in
# docker: its flags live in memory a filter cannot read, so libc falls back to clone). Everything
# else is allowed. Architecture: the host's native one.
import errno
import sys

import seccomp

DENY = [
    'unshare', 'setns', 'mount', 'umount', 'umount2', 'pivot_root', 'fsopen', 'fsconfig', 'fsmount',
    'fspick', 'move_mount', 'open_tree', 'mount_setattr', 'add_key', 'request_key', 'keyctl',
    'init_module', 'finit_module', 'delete_module', 'create_module', 'query_module',
    'get_kernel_syms', 'kexec_load', 'kexec_file_load', 'bpf', 'perf_event_open', 'userfaultfd',
    'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'open_by_handle_at',
    'name_to_handle_at', 'lookup_dcookie', 'acct', 'swapon', 'swapoff', 'reboot', 'settimeofday',
    'stime', 'clock_settime', 'clock_adjtime', 'quotactl', 'quotactl_fd', 'nfsservctl', 'sysfs',
    '_sysctl', 'uselib', 'ustat', 'vm86', 'vm86old', 'iopl', 'ioperm', 'syslog', 'vhangup',
]
CLONE_NEW = {
    'CLONE_NEWNS': 0x00020000,
    'CLONE_NEWCGROUP': 0x02000000,
    'CLONE_NEWUTS': 0x04000000,
    'CLONE_NEWIPC': 0x08000000,
    'CLONE_NEWUSER': 0x10000000,
    'CLONE_NEWPID': 0x20000000,
    'CLONE_NEWNET': 0x40000000,
    'CLONE_NEWTIME': 0x00000080,
}


def build():
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENY:
        try:
            f.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (RuntimeError, ValueError):
            pass  # not a syscall of this architecture
    for flag in CLONE_NEW.values():
        f.add_rule(seccomp.ERRNO(errno.EPERM), 'clone', seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), 'clone3')
    return f


if __name__ == '__main__':
    build().export_bpf(sys.stdout)
    sys.stdout.flush()
