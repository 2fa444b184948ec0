// Command splice-relay is the streams benchmark's floor (bench/streams.bench.ts): the
// least a user-space TCP proxy can do per connection. It accepts on one address, dials
// the other, and copies between the two raw TCP connections with io.Copy, which Go turns
// into splice(2) through a pipe, so no byte is copied into this process. No matching, no
// logging, no balancing: whatever it costs, every user-space proxy costs at least that.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: splice-relay LISTEN_ADDR UPSTREAM_ADDR")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ready")
	for {
		client, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go relay(client.(*net.TCPConn), os.Args[2])
	}
}

func relay(client *net.TCPConn, upstreamAddr string) {
	defer client.Close()
	conn, err := net.Dial("tcp", upstreamAddr)
	if err != nil {
		return
	}
	upstream := conn.(*net.TCPConn)
	defer upstream.Close()
	toUpstreamDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(upstream, client)
		_ = upstream.CloseWrite()
		close(toUpstreamDone)
	}()
	_, _ = io.Copy(client, upstream)
	_ = client.CloseWrite()
	<-toUpstreamDone
}
