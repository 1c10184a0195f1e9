// Command server is the samples' application (package sampleapp builds it into an image): a small
// HTTP server that says who answered. GET / answers "<greeting> from <pod>, version <version>\n"
// ($GREETING, default "hello"; the pod's name, which the kubelet makes the hostname, or
// $POD_NAME; $SAMPLE_APP_VERSION, set by the image); GET /healthz answers "ok". It listens on
// --port, default $PORT, else 8080, writes nothing to its file system (it runs with a read-only
// root as any user) and stops at once on SIGTERM, so a rollout does not wait for the grace period.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	port := 8080
	if p, err := strconv.Atoi(os.Getenv("PORT")); err == nil {
		port = p
	}
	flag.IntVar(&port, "port", port, "TCP port to listen on (default $PORT, else 8080)")
	flag.Parse()
	if err := run(port); err != nil {
		log.Fatal(err)
	}
}

func run(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %d: want 1-65535", port)
	}
	greeting := os.Getenv("GREETING")
	if greeting == "" {
		greeting = "hello"
	}
	pod := os.Getenv("POD_NAME")
	if pod == "" {
		pod, _ = os.Hostname()
	}
	answer := fmt.Sprintf("%s from %s, version %s\n", greeting, pod, os.Getenv("SAMPLE_APP_VERSION"))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprint(w, answer) })
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok") })
	srv := &http.Server{Addr: net.JoinHostPort("", strconv.Itoa(port)), Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	// As PID 1 of its container the program gets SIGTERM only through a handler.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("listening on :%d", port)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
