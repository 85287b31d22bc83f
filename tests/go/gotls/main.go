// gotls: a net/http server and client over TLS in one process, standard library only,
// for depwatch's Go probe tests (tests/unit/test_goprobe.c, tests/integration/test_gotls.py).
// The certificate is made in memory at start, so the program needs no file and no network.
//
//	gotls [-n N] [-c C] [-h1] [-deep D]   N requests (default 100) from C goroutines (default 8)
//	                            on one client (HTTP/2 by ALPN unless -h1), then prints "requests N";
//	                            -deep: each handler first recurses D frames of 1 KiB (stack growth).
//	      [-delay MS] [-code C] [-hang K]   the handler answers after MS ms, with status C;
//	                            after K answers every handler waits forever (a hung server).
//	      [-addr A]             the server's address (default 127.0.0.1:0, any port)
//
// It prints "listen ADDR" first, and with the requests line the client's own p50 ("p50_us")
// and a digest of every answer's status and body ("answers"): the same with and without probes.
//
// With -wait it first prints "ready PID" and waits for a line on stdin, so a test can attach
// its probes before the requests start. Each TLS connection's socket is printed as it opens,
// "fd client N" or "fd server N": the ground truth for the probes' *tls.Conn -> fd reads.
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

func selfSigned() (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

var outMu sync.Mutex

// recurse uses 1 KiB of stack a frame, so Go copies the goroutine's stack to a larger one.
//
//go:noinline
func recurse(n int) int {
	var pad [1024]byte
	pad[n%1024] = 1
	if n == 0 {
		return 0
	}
	return recurse(n-1) + int(pad[n%1024])
}

func printFD(side string, c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		outMu.Lock()
		fmt.Printf("fd %s %d\n", side, fd)
		outMu.Unlock()
	})
}

func main() {
	n := flag.Int("n", 100, "requests")
	c := flag.Int("c", 8, "client goroutines")
	h1 := flag.Bool("h1", false, "HTTP/1.1 instead of HTTP/2")
	wait := flag.Bool("wait", false, "print ready and wait for a line on stdin")
	deep := flag.Int("deep", 0, "the handler first recurses this deep (1 KiB a frame): its goroutine's stack grows and moves")
	delay := flag.Int("delay", 0, "the handler answers after this many ms")
	code := flag.Int("code", 200, "the answers' status")
	hang := flag.Int64("hang", -1, "after this many answers every handler hangs (the first prints \"hanging\")")
	addr := flag.String("addr", "127.0.0.1:0", "the server's address")
	flag.Parse()
	var answered int64

	cert, pool := selfSigned()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if *deep > 0 && recurse(*deep) != *deep {
			panic("recurse")
		}
		if *hang >= 0 {
			if k := atomic.AddInt64(&answered, 1); k > *hang {
				if k == *hang+1 {
					outMu.Lock()
					fmt.Println("hanging")
					outMu.Unlock()
				}
				select {}
			}
		}
		if *delay > 0 {
			time.Sleep(time.Duration(*delay) * time.Millisecond)
		}
		w.WriteHeader(*code)
		io.WriteString(w, "ok "+r.URL.Path+"\n")
	})}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		if tc, ok := c.(*tls.Conn); ok && st == http.StateNew {
			printFD("server", tc.NetConn())
		}
	}
	if *h1 {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	go srv.ServeTLS(ln, "", "")

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: !*h1,
		MaxConnsPerHost: 1}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			printFD("client", c)
		}
		return c, err
	}
	client := &http.Client{Transport: tr}
	url := "https://" + ln.Addr().String() + "/"
	fmt.Printf("listen %s\n", ln.Addr().String())

	if *wait {
		fmt.Printf("ready %d\n", os.Getpid())
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	start := time.Now()
	var done, failed int64
	var next int64
	lat := make([]time.Duration, 0, *n)
	digest := sha256.New()
	var wg sync.WaitGroup
	answers := make([]string, *n)
	proto := ""
	var mu sync.Mutex
	for i := 0; i < *c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := atomic.AddInt64(&next, 1)
				if i > int64(*n) {
					break
				}
				t0 := time.Now()
				resp, err := client.Get(fmt.Sprintf("%s%d", url, i))
				if err != nil {
					atomic.AddInt64(&failed, 1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				d := time.Since(t0)
				mu.Lock()
				proto = resp.Proto
				lat = append(lat, d)
				answers[i-1] = fmt.Sprintf("%d %s", resp.StatusCode, body)
				mu.Unlock()
				atomic.AddInt64(&done, 1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, a := range answers {
		digest.Write([]byte(a))
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	p50 := time.Duration(0)
	if len(lat) > 0 {
		p50 = lat[len(lat)/2]
	}
	// Let the server's last writes return before exiting (a probe test counts the returns).
	tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	srv.Shutdown(ctx)
	cancel()
	fmt.Printf("requests %d failed %d proto %s elapsed_us %d p50_us %d answers %x\n", done, failed, proto,
		elapsed.Microseconds(), p50.Microseconds(), digest.Sum(nil))
	if failed != 0 {
		os.Exit(1)
	}
}
