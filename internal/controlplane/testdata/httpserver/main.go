// Command httpserver is a test image's program for the real node: it serves on :8080 what the
// container sees of itself (its user, whether its root file system is writable, its hostname).
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		err := os.WriteFile("/probe", []byte("x"), 0o644)
		host, _ := os.Hostname()
		fmt.Fprintf(w, "uid=%d readonly=%t host=%s\n", os.Getuid(), err != nil, host)
	})
	if err := http.ListenAndServe(":8080", nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
