// Package procid names a process so that a signal sent to it later reaches that process, or its
// process group, and no other.
//
// A PID alone does not: once a process has exited and been reaped, the kernel hands its number to
// a later process (pid_max is 32768 on many systems), and a process group's ID is its leader's
// PID. A PID remembered in a file or a variable may name a stranger by the time it is used.
//
//   - An Identity is a PID with the process's start time (field 22 of /proc/PID/stat) and the boot
//     it belongs to. Written to a pid file, it tells the process apart from a later one that took
//     its number. Open checks it and returns a Process that holds a pidfd: signals through it reach
//     that very process, or its group, never a later holder of the number.
//   - A Child is a process this process started. Its group is signalled by number only while the
//     leader is not yet reaped, so the number cannot have passed to another process.
//
// Linux only (/proc, pidfd_open and pidfd_send_signal; a process group through a pidfd needs Linux
// 6.9).
package procid
