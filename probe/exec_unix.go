//go:build unix

package probe

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// startInGroup puts the child in its own process group, so a Ctrl-C at the
// terminal reaches the probe only, which forwards it once to the whole
// group: the command and its workers see exactly one SIGINT, as they would
// without the probe in between.
func startInGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the child's process group, or to the child
// alone if the group is gone.
func signalGroup(p *os.Process, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Signal(sig)
	}
	if err := syscall.Kill(-p.Pid, s); err == nil || !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return p.Signal(sig)
}

// terminateSignal is sent when the probe's context ends.
var terminateSignal os.Signal = syscall.SIGTERM

// exitStatus returns the exit code of a finished command, using the shell
// convention 128+n for a command killed by signal n, and that signal's name.
func exitStatus(ps *os.ProcessState) (int, string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal().String()
	}
	return ps.ExitCode(), ""
}
