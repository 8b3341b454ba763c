// A Go net/http server and client over loopback (127.0.0.1, then ::1), for
// test/e2e's inet_apps_test, which builds it with CGO_ENABLED=0 (Go's own
// resolver and netpoller: raw syscalls, epoll, many threads). It prints only
// what does not change from run to run.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:16]
}

func fail(host string, err error) {
	fmt.Println(host, "error:", err)
	os.Exit(1)
}

func one(host string) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		fail(host, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/peer", func(w http.ResponseWriter, r *http.Request) {
		h, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(w, "%s", h)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("0123456789abcdef"), 65536)) // 1 MiB
	})
	mux.HandleFunc("/post", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "%d %s", len(b), sum(b))
	})
	srv := &http.Server{Handler: mux, ReadTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, []byte) {
		resp, err := client.Get(base + path)
		if err != nil {
			fail(host, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			fail(host, err)
		}
		return resp.StatusCode, b
	}
	code, b := get("/peer")
	fmt.Println(host, "peer", code, string(b))
	code, b = get("/big")
	fmt.Println(host, "big", code, len(b), sum(b))
	data := bytes.Repeat([]byte("g"), 300000)
	resp, err := client.Post(base+"/post", "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		fail(host, err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(host, "post", resp.StatusCode, string(b), "want", len(data), sum(data))
	code, b = get("/missing")
	fmt.Println(host, "missing", code, strings.TrimSpace(string(b)))
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := []string{}
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			code, b := get("/big")
			mu.Lock()
			got = append(got, fmt.Sprintf("%d:%d", code, len(b)))
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	sort.Strings(got)
	fmt.Println(host, "concurrent", len(got), got[0], got[len(got)-1])
	client.CloseIdleConnections()
	srv.Close()
	fmt.Println(host, "serve returned", <-done)
	// Nobody listens there now.
	_, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	fmt.Println(host, "after close refused", err != nil && strings.Contains(err.Error(), "connection refused"))
}

// net.Listen("tcp", ":0"), as most servers are started: Go binds :: with
// IPV6_V6ONLY off, and a v4 client is seen as 127.0.0.1.
func dualStack() {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		fail("dual stack", err)
	}
	fmt.Println("default listen", ln.Addr().(*net.TCPAddr).IP)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprint(w, h)
	})}
	go srv.Serve(ln)
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	client := &http.Client{Timeout: 10 * time.Second}
	for _, h := range []string{"127.0.0.1", "::1"} {
		resp, err := client.Get("http://" + net.JoinHostPort(h, port) + "/")
		if err != nil {
			fail(h, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println("default listen, client", h, resp.StatusCode, string(b))
	}
	client.CloseIdleConnections()
	srv.Close()
}

func main() {
	one("127.0.0.1")
	one("::1")
	dualStack()
}
