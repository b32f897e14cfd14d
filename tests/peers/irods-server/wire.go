package main

// The iRODS framing: a 4-byte big-endian header length, an XML MsgHeader_PI,
// then msgLen bytes of packed message, errorLen bytes of RError_PI and bsLen
// bytes of raw payload. Every length is bounded before anything is allocated,
// so a hostile length costs an error, not memory.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
)

const (
	maxHeaderBytes = 4096
	maxMsgBytes    = 8 << 20  // packed structs: GenQuery requests are a few KiB
	maxErrorBytes  = 1 << 20  // clients send no error section; bound it anyway
	maxBsBytes     = 64 << 20 // one write call's payload (clients send <= 32 MiB)
)

type header struct {
	Type     string
	MsgLen   int
	ErrorLen int
	BsLen    int
	IntInfo  int
}

type message struct {
	header
	Msg   []byte
	Error []byte
	Bs    []byte
}

// protocolError is a malformed or oversized frame: the connection is closed
// after it is logged, because the stream can no longer be trusted.
type protocolError struct{ what string }

func (e *protocolError) Error() string { return e.what }

func protoErrorf(format string, args ...any) error {
	return &protocolError{fmt.Sprintf(format, args...)}
}

func readHeader(r *bufio.Reader) (header, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return header{}, err
	}
	n := int32(binary.BigEndian.Uint32(lenBuf[:]))
	if n <= 0 || n > maxHeaderBytes {
		return header{}, protoErrorf("header length %d outside 1..%d", n, maxHeaderBytes)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return header{}, protoErrorf("truncated header (%d bytes announced): %v", n, err)
	}
	node, err := parseXML(buf)
	if err != nil {
		return header{}, protoErrorf("header: %v", err)
	}
	if node.Name != "MsgHeader_PI" {
		return header{}, protoErrorf("header root is <%s>, not <MsgHeader_PI>", node.Name)
	}
	h := header{Type: node.Str("type")}
	fields := []struct {
		tag string
		dst *int
		max int
	}{
		{"msgLen", &h.MsgLen, maxMsgBytes},
		{"errorLen", &h.ErrorLen, maxErrorBytes},
		{"bsLen", &h.BsLen, maxBsBytes},
		{"intInfo", &h.IntInfo, -1},
	}
	for _, f := range fields {
		v, err := strconv.Atoi(node.Str(f.tag))
		if err != nil {
			return header{}, protoErrorf("header <%s>%q is not an integer", f.tag, node.Str(f.tag))
		}
		if f.max >= 0 && (v < 0 || v > f.max) {
			return header{}, protoErrorf("header <%s> %d outside 0..%d", f.tag, v, f.max)
		}
		*f.dst = v
	}
	return h, nil
}

func readMessage(r *bufio.Reader) (*message, error) {
	return readMessageInto(r, nil)
}

// readMessageInto reads a message whose bs section reuses `bsBuf` when it
// is large enough: data-object writes then cost no allocation (and no
// zeroing) per call.
func readMessageInto(r *bufio.Reader, bsBuf []byte) (*message, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	m := &message{header: h}
	for _, part := range []struct {
		n   int
		dst *[]byte
	}{{h.MsgLen, &m.Msg}, {h.ErrorLen, &m.Error}, {h.BsLen, &m.Bs}} {
		if part.n == 0 {
			continue
		}
		if part.dst == &m.Bs && cap(bsBuf) >= part.n {
			*part.dst = bsBuf[:part.n]
		} else {
			*part.dst = make([]byte, part.n)
		}
		if _, err := io.ReadFull(r, *part.dst); err != nil {
			return nil, protoErrorf("truncated %s message: %v", h.Type, err)
		}
	}
	return m, nil
}

// writeHeaderAndMsg writes and flushes a reply's header and msg section
// for bsLen bytes of bs that the caller sends itself, next.
func writeHeaderAndMsg(w *bufio.Writer, typ string, intInfo int, msg []byte, bsLen int) error {
	hdr := fmt.Sprintf("<MsgHeader_PI><type>%s</type><msgLen>%d</msgLen><errorLen>0</errorLen>"+
		"<bsLen>%d</bsLen><intInfo>%d</intInfo></MsgHeader_PI>", typ, len(msg), bsLen, intInfo)
	var lenBuf [4]byte
	binary.BigEndian.PutUint32(lenBuf[:], uint32(len(hdr)))
	for _, b := range [][]byte{lenBuf[:], []byte(hdr), msg} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return w.Flush()
}

func writeMessage(w *bufio.Writer, typ string, intInfo int, msg, errSection, bs []byte) error {
	hdr := fmt.Sprintf("<MsgHeader_PI><type>%s</type><msgLen>%d</msgLen><errorLen>%d</errorLen>"+
		"<bsLen>%d</bsLen><intInfo>%d</intInfo></MsgHeader_PI>",
		typ, len(msg), len(errSection), len(bs), intInfo)
	var lenBuf [4]byte
	binary.BigEndian.PutUint32(lenBuf[:], uint32(len(hdr)))
	for _, b := range [][]byte{lenBuf[:], []byte(hdr), msg, errSection, bs} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return w.Flush()
}
