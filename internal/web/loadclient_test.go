package web_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// rawClient is a minimal HTTP/1.1 keep-alive client over one connection,
// like the load generators (wrk, hey) that measure a server without
// spending most of the CPU in the client: net/http's Transport hands each
// request between three goroutines, which on a small machine costs as much
// as the server's work. It reads responses framed by Content-Length only,
// which the API always sends.
type rawClient struct {
	host string
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	body []byte
}

func dialRaw(addr string) (*rawClient, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawClient{host: addr, conn: conn, r: bufio.NewReaderSize(conn, 16<<10), w: bufio.NewWriter(conn)}, nil
}

func (c *rawClient) Close() error { return c.conn.Close() }

// get sends GET target and returns the status and body; the body is valid
// until the next call.
func (c *rawClient) get(target string) (int, []byte, error) {
	if err := c.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return 0, nil, err
	}
	c.w.WriteString("GET ")
	c.w.WriteString(target)
	c.w.WriteString(" HTTP/1.1\r\nHost: ")
	c.w.WriteString(c.host)
	c.w.WriteString("\r\nAccept: application/json\r\n\r\n")
	if err := c.w.Flush(); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	_, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(rest) < 3 {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return 0, nil, fmt.Errorf("bad Content-Length %q", v)
			}
		}
	}
	if length < 0 {
		return 0, nil, errors.New("response without Content-Length")
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	c.body = c.body[:length]
	if _, err := io.ReadFull(c.r, c.body); err != nil {
		return 0, nil, err
	}
	return status, c.body, nil
}
