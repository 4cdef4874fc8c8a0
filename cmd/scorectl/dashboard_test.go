package main

import (
	"net"
	"strings"
	"testing"
)

// Off loopback the dashboard must know the host names it is reached by; the refusal comes
// before it connects to a cluster or opens a port.
func TestDashboardOffLoopbackIsRefusedWithoutAcceptHosts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	_, _, err = execute(t, "dashboard", "--kubeconfig", "/nonexistent", "--address", "0.0.0.0", "--port", port)
	if err == nil || !strings.Contains(err.Error(), "--accept-hosts") || !strings.Contains(err.Error(), "DNS rebinding") {
		t.Fatalf("want a refusal naming --accept-hosts, got %v", err)
	}
	// the port was not taken
	ln, err = net.Listen("tcp", "0.0.0.0:"+port)
	if err != nil {
		t.Fatalf("the refused command held its port: %v", err)
	}
	ln.Close()
}

func TestDashboardFlagsThatCannotWorkAreRefused(t *testing.T) {
	for name, c := range map[string]struct {
		args  []string
		token string
		want  string
	}{
		"a pattern that does not compile": {[]string{"--address", "0.0.0.0", "--accept-hosts", "dash["}, "", "--accept-hosts"},
		"an empty pattern":                {[]string{"--address", "0.0.0.0", "--accept-hosts", ","}, "", "--accept-hosts"},
		"accepted hosts on loopback":      {[]string{"--accept-hosts", `dash\.example\.com`}, "", "off loopback"},
		"a short token":                   {[]string{"--address", "0.0.0.0", "--accept-hosts", `dash\.example\.com`}, "hunter2", dashboardTokenEnv},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(dashboardTokenEnv, c.token)
			_, _, err := execute(t, append([]string{"dashboard", "--kubeconfig", "/nonexistent", "--port", "0"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want a refusal naming %s, got %v", c.want, err)
			}
		})
	}
}

func TestDashboardAddressNamesAHostItAnswersTo(t *testing.T) {
	for _, c := range []struct {
		address string
		accept  []string
		want    string
	}{
		{"0.0.0.0", []string{`dash\.example\.com`, `10\.0\.0\.7`}, "dash.example.com:8001"},
		{"10.0.0.7", []string{`.*\.example\.com`, `10\.0\.0\.7`}, "10.0.0.7:8001"},
		{"10.0.0.7", []string{`.*\.example\.com`}, "10.0.0.7:8001"},
		{"fd00::7", []string{`.*`}, "[fd00::7]:8001"},
	} {
		if got := dashboardHost(c.address, "8001", c.accept); got != c.want {
			t.Errorf("dashboardHost(%s, %q) = %s, want %s", c.address, c.accept, got, c.want)
		}
	}
}
