package util

import (
	"os/exec"
)

// KubectlE runs bin/kubectl against the cluster and returns its combined
// output and error.
func (c *Cluster) KubectlE(args ...string) (string, error) {
	path, err := toolPath("kubectl")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(path, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
