package main

// One client connection: start-up (StartupPack, optional negotiation,
// Version), authentication, then one API request and one reply at a time.

import (
	"bufio"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

const (
	collStatInterim = 99999996 // SYS_SVR_TO_CLI_COLL_STAT
	collStatReply   = 99999997 // SYS_CLI_TO_SVR_COLL_STAT_REPLY
	idleTimeout     = 10 * time.Minute
)

type reply struct {
	intInfo int
	msg     []byte
	bs      []byte
	// bsFile, when set, is the bs section instead of bs: bsLen bytes of the
	// file from its current offset, sent by the kernel (sendfile) rather
	// than read into memory and written.
	bsFile *os.File
	bsLen  int
}

type handler func(s *session, m *message, body *node) (reply, error)

type session struct {
	srv        *server
	id         int64
	conn       net.Conn
	r          *bufio.Reader
	w          *bufio.Writer
	proxyUser  string
	clientUser string
	clientZone string
	user       *user // set once authenticated
	challenge  string
	fds        map[int]*openFile
	nextFd     int
	queries    map[int]*pagedQuery
	nextQuery  int
	// Buffers reused by every data call of the connection (one request at
	// a time): write payloads in, read payloads out.
	bsIn  []byte
	bsOut []byte
}

var sessionIDs atomic.Int64

func (srv *server) serve(conn net.Conn) {
	s := &session{srv: srv, id: sessionIDs.Add(1), conn: conn, r: bufio.NewReaderSize(conn, 256<<10),
		w: bufio.NewWriterSize(conn, 256<<10), fds: map[int]*openFile{}, nextFd: 3,
		queries: map[int]*pagedQuery{}, nextQuery: 1}
	defer func() {
		s.closeAll()
		conn.Close()
	}()
	if err := s.startup(); err != nil {
		if !errors.Is(err, io.EOF) { // a port probe
			s.logf("start-up rejected: %v", err)
		}
		return
	}
	for {
		conn.SetReadDeadline(time.Now().Add(idleTimeout))
		m, err := readMessageInto(s.r, s.bsIn)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.logf("closing: %v", err)
			}
			return
		}
		switch m.Type {
		case "RODS_DISCONNECT":
			return
		case "RODS_API_REQ":
			if len(m.Bs) > cap(s.bsIn) {
				s.bsIn = m.Bs
			}
			if err := s.dispatch(m); err != nil {
				s.logf("closing: %v", err)
				return
			}
		default:
			s.logf("closing: unexpected message type %q", m.Type)
			return
		}
	}
}

func (s *session) logf(format string, args ...any) {
	s.srv.log.Printf("[conn %d %s] %s", s.id, s.conn.RemoteAddr(), fmt.Sprintf(format, args...))
}

func (s *session) send(typ string, intInfo int, msg, errSection, bs []byte) error {
	s.conn.SetWriteDeadline(time.Now().Add(idleTimeout))
	return writeMessage(s.w, typ, intInfo, msg, errSection, bs)
}

// sendFileSection sends a reply whose bs section is n bytes of f from its
// offset: the header through the buffered writer, then the bytes by
// io.CopyN onto the connection (sendfile on Linux). Fewer bytes than the
// header announced (the file shrank meanwhile) cannot be taken back: the
// error closes the connection.
func (s *session) sendFileSection(intInfo int, msg []byte, f *os.File, n int) error {
	s.conn.SetWriteDeadline(time.Now().Add(idleTimeout))
	if err := writeHeaderAndMsg(s.w, "RODS_API_REPLY", intInfo, msg, n); err != nil {
		return err
	}
	if _, err := io.CopyN(s.conn, f, int64(n)); err != nil {
		return fmt.Errorf("sending %d bytes of a vault file: %v", n, err)
	}
	return nil
}

func (s *session) startup() error {
	s.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	m, err := readMessage(s.r)
	if err != nil {
		return err
	}
	if m.Type != "RODS_CONNECT" {
		return fmt.Errorf("first message is %q, not RODS_CONNECT", m.Type)
	}
	sp, err := parseXML(m.Msg)
	if err != nil || sp.Name != "StartupPack_PI" {
		return fmt.Errorf("StartupPack_PI: invalid (%v)", err)
	}
	s.proxyUser, s.clientUser = sp.Str("proxyUser"), sp.Str("clientUser")
	s.clientZone = sp.Str("clientRcatZone")
	if s.clientUser == "" {
		s.clientUser = s.proxyUser
	}
	if strings.Contains(sp.Str("option"), "request_server_negotiation") {
		neg := pack("CS_NEG_PI", func(b *builder) { b.int("status", 1); b.str("result", "CS_NEG_REFUSE") })
		if err := s.send("RODS_CS_NEG_T", 0, neg, nil, nil); err != nil {
			return err
		}
		m, err := readMessage(s.r)
		if err != nil {
			return err
		}
		ans, err := parseXML(m.Msg)
		if m.Type != "RODS_CS_NEG_T" || err != nil {
			return fmt.Errorf("negotiation answer: type %q (%v)", m.Type, err)
		}
		if !strings.Contains(ans.Str("result"), "CS_NEG_USE_TCP") {
			// The peer speaks plain TCP only: a client that insists on TLS
			// gets the error a REFUSE server gives.
			s.send("RODS_VERSION", -1000000, nil, nil, nil) // SERVER_NEGOTIATION_ERROR
			return fmt.Errorf("client chose %q; this peer refuses TLS", ans.Str("result"))
		}
	}
	ver := pack("Version_PI", func(b *builder) {
		b.int("status", 0)
		b.str("relVersion", s.srv.version)
		b.str("apiVersion", "d")
		b.int("reconnPort", 0)
		b.str("reconnAddr", "")
		b.int("cookie", 400)
	})
	return s.send("RODS_VERSION", 0, ver, nil, nil)
}

var preAuthAPIs = map[int]bool{700: true, 703: true, 704: true, 110000: true}

func (s *session) dispatch(m *message) error {
	api := m.IntInfo
	h, ok := handlers[api]
	var rep reply
	var err error
	switch {
	case !ok:
		s.logf("rejected unknown API number %d", api)
		err = fail(SYS_UNMATCHED_API_NUM, "API %d is not served by this peer", api)
	case s.user == nil && !preAuthAPIs[api]:
		err = fail(SYS_NO_API_PRIV, "API %d before authentication", api)
	default:
		var body *node
		if len(m.Msg) > 0 {
			body, err = parseXML(m.Msg)
			if err != nil {
				s.logf("rejected API %d: %v", api, err)
				err = fail(SYS_API_INPUT_ERR, "API %d: %v", api, err)
			}
		}
		if err == nil {
			rep, err = h(s, m, body)
		}
	}
	if err != nil {
		var ie *irodsError
		if !errors.As(err, &ie) {
			s.logf("API %d internal error: %v", api, err)
			ie = fail(SYS_INTERNAL_ERR, "%v", err)
		}
		return s.send("RODS_API_REPLY", ie.code, nil, rErrorPI(ie.code, ie.msg), nil)
	}
	if rep.bsFile != nil {
		return s.sendFileSection(rep.intInfo, rep.msg, rep.bsFile, rep.bsLen)
	}
	return s.send("RODS_API_REPLY", rep.intInfo, rep.msg, nil, rep.bs)
}

// --- authentication ---

func newChallenge() string {
	var raw [32]byte
	rand.Read(raw[:])
	return hex.EncodeToString(raw[:]) // 64 characters, as modern servers send
}

// expectedDigest is MD5(challenge[:64] + password NUL-padded to 50) with
// NUL bytes of the digest turned into 1, as both clients compute it.
func expectedDigest(challenge, password string) []byte {
	buf := make([]byte, 64+50)
	copy(buf, challenge)
	copy(buf[64:], password)
	d := md5.Sum(buf)
	for i := range d {
		if d[i] == 0 {
			d[i] = 1
		}
	}
	return d[:]
}

func (s *session) verify(userName, zone, digestB64 string) error {
	if zone == "" {
		zone = s.srv.zone
	}
	u, err := s.srv.cat.lookupUser(userName, zone)
	if err != nil {
		return err
	}
	if u == nil || u.kind == "rodsgroup" {
		s.logf("authentication: unknown user %q#%q", userName, zone)
		return fail(CAT_INVALID_USER, "unknown user %s#%s", userName, zone)
	}
	got, err := base64.StdEncoding.DecodeString(digestB64)
	if err != nil || s.challenge == "" || u.password == "" ||
		string(got) != string(expectedDigest(s.challenge, u.password)) {
		s.logf("authentication: wrong password for %q", userName)
		return fail(CAT_INVALID_AUTHENTICATION, "authentication failed for %s", userName)
	}
	s.challenge = ""
	if s.clientUser != "" && s.clientUser != userName {
		if u.kind != "rodsadmin" {
			return fail(CAT_INVALID_AUTHENTICATION, "%s may not act for %s", userName, s.clientUser)
		}
		cu, err := s.srv.cat.lookupUser(s.clientUser, zone)
		if err != nil || cu == nil {
			return fail(CAT_INVALID_USER, "unknown client user %s", s.clientUser)
		}
		u = cu
	}
	s.user = u
	return nil
}

func authRequest(s *session, _ *message, _ *node) (reply, error) {
	s.challenge = newChallenge()
	return reply{msg: pack("authRequestOut_PI", func(b *builder) {
		b.str("challenge", base64.StdEncoding.EncodeToString([]byte(s.challenge)))
	})}, nil
}

func authResponse(s *session, _ *message, body *node) (reply, error) {
	name := body.Str("username")
	zone := s.clientZone
	if i := strings.Index(name, "#"); i >= 0 {
		name, zone = name[:i], name[i+1:]
	}
	return reply{}, s.verify(name, zone, body.Str("response"))
}

// authFramework serves API 110000, the 4.3 plugin flow: JSON in, JSON out.
func authFramework(s *session, _ *message, body *node) (reply, error) {
	raw, err := body.Base64Buf()
	if err != nil {
		return reply{}, fail(SYS_API_INPUT_ERR, "%v", err)
	}
	req := map[string]any{}
	if err := json.Unmarshal(raw, &req); err != nil {
		return reply{}, fail(SYS_API_INPUT_ERR, "auth request is not JSON: %v", err)
	}
	if scheme, _ := req["scheme"].(string); scheme != "native" {
		return reply{}, fail(AUTHENTICATION_ERROR, "auth scheme %q is not served (native only)", scheme)
	}
	str := func(k string) string { v, _ := req[k].(string); return v }
	switch str("next_operation") {
	case "auth_agent_auth_request":
		s.challenge = newChallenge()
		req["request_result"] = s.challenge
	case "auth_agent_auth_response":
		if err := s.verify(str("user_name"), str("zone_name"), str("digest")); err != nil {
			return reply{}, err
		}
		delete(req, "digest")
	default:
		return reply{}, fail(SYS_INVALID_INPUT_PARAM, "unknown next_operation %q", str("next_operation"))
	}
	out, _ := json.Marshal(req)
	return reply{msg: binBytesBuf(out)}, nil
}

func miscServerInfo(s *session, _ *message, _ *node) (reply, error) {
	return reply{msg: pack("MiscSvrInfo_PI", func(b *builder) {
		b.int("serverType", 1) // RCAT_ENABLED
		b.int("serverBootTime", s.srv.started.Unix())
		b.str("relVersion", s.srv.version)
		b.str("apiVersion", "d")
		b.str("rodsZone", s.srv.zone)
	})}, nil
}

// collStatExchange sends one interim CollOprStat_PI and reads the client's
// 4-byte acknowledgement, as a long recursive operation does.
func (s *session) collStatExchange(files int, lastPath string) error {
	stat := pack("CollOprStat_PI", func(b *builder) {
		b.int("filesCnt", int64(files))
		b.int("totalFileCnt", 0)
		b.int("bytesWritten", 0)
		b.str("lastObjPath", lastPath)
	})
	if err := s.send("RODS_API_REPLY", collStatInterim, stat, nil, nil); err != nil {
		return err
	}
	var ack [4]byte
	if _, err := io.ReadFull(s.r, ack[:]); err != nil {
		return err
	}
	if v := binary.BigEndian.Uint32(ack[:]); v != collStatReply {
		return protoErrorf("collection-stat acknowledgement is %d, not %d", v, collStatReply)
	}
	return nil
}
