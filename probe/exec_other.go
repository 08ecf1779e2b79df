//go:build !unix

package probe

import (
	"os"
	"os/exec"
)

func startInGroup(cmd *exec.Cmd) {}

func signalGroup(p *os.Process, sig os.Signal) error { return p.Signal(sig) }

var terminateSignal os.Signal = os.Kill

func exitStatus(ps *os.ProcessState) (int, string) { return ps.ExitCode(), "" }
