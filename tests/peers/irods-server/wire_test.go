package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func framed(hdr string, body []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, uint32(len(hdr)))
	b.WriteString(hdr)
	b.Write(body)
	return b.Bytes()
}

func TestReadMessageSplitsMsgErrorAndBs(t *testing.T) {
	in := framed("<MsgHeader_PI><type>RODS_API_REQ</type><msgLen>3</msgLen><errorLen>1</errorLen>"+
		"<bsLen>2</bsLen><intInfo>676</intInfo></MsgHeader_PI>", []byte("abcdef"))
	m, err := readMessage(bufio.NewReader(bytes.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	if m.IntInfo != 676 || string(m.Msg) != "abc" || string(m.Error) != "d" || string(m.Bs) != "ef" {
		t.Fatalf("got %+v", m)
	}
}

func TestReadMessageRejectsAnOversizedHeaderLength(t *testing.T) {
	_, err := readMessage(bufio.NewReader(bytes.NewReader([]byte{0x7f, 0xff, 0xff, 0xff})))
	if _, ok := err.(*protocolError); !ok || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadMessageRejectsAnOversizedBodyBeforeReadingIt(t *testing.T) {
	in := framed("<MsgHeader_PI><type>RODS_API_REQ</type><msgLen>999999999</msgLen><errorLen>0</errorLen>"+
		"<bsLen>0</bsLen><intInfo>1</intInfo></MsgHeader_PI>", nil)
	if _, err := readMessage(bufio.NewReader(bytes.NewReader(in))); err == nil {
		t.Fatal("accepted a 1 GB message length")
	}
}

func TestReadMessageReportsATruncatedBody(t *testing.T) {
	in := framed("<MsgHeader_PI><type>RODS_API_REQ</type><msgLen>10</msgLen><errorLen>0</errorLen>"+
		"<bsLen>0</bsLen><intInfo>1</intInfo></MsgHeader_PI>", []byte("abc"))
	if _, err := readMessage(bufio.NewReader(bytes.NewReader(in))); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseXMLReadsRepeatedFieldsInOrder(t *testing.T) {
	n, err := parseXML([]byte("<KeyValPair_PI><ssLen>2</ssLen><keyWord>a</keyWord><keyWord>b</keyWord>" +
		"<svalue>1</svalue><svalue>&lt;2&gt;</svalue></KeyValPair_PI>"))
	if err != nil {
		t.Fatal(err)
	}
	parent := &node{Children: []*node{n}}
	kv := parent.KeyVals()
	if kv["a"] != "1" || kv["b"] != "<2>" {
		t.Fatalf("kv = %v", kv)
	}
}

func TestParseXMLRejectsDeepNesting(t *testing.T) {
	deep := strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100)
	if _, err := parseXML([]byte(deep)); err == nil {
		t.Fatal("accepted 100 levels")
	}
}

func TestEscapeXMLKeepsQuotesAndEscapesMarkup(t *testing.T) {
	if got := escapeXML(`a<b>&'"` + "`"); got != `a&lt;b&gt;&amp;'"`+"`" {
		t.Fatalf("got %q", got)
	}
}

func TestGenQuery1ConditionBecomesBoundParameters(t *testing.T) {
	q := newQuery()
	toks, err := lex("= 'x'' or 1=1 --' || like 'y%'")
	if err != nil {
		t.Fatal(err)
	}
	p := &parser{toks: toks}
	col := columnsByName["COLL_NAME"]
	a, err := q.predicate(p, col)
	if err != nil {
		t.Fatal(err)
	}
	if a != "c.coll_name = ?" || q.args[0] != "x' or 1=1 --" {
		t.Fatalf("sql %q args %v", a, q.args)
	}
}

func TestGenQuery2CompilesAJoinThroughTheAccessTable(t *testing.T) {
	s := &session{}
	q, err := s.parseGenQuery2("select USER_NAME, DATA_ACCESS_PERM_NAME where COLL_NAME = '/z' and DATA_NAME = 'f'")
	if err != nil {
		t.Fatal(err)
	}
	sqlText, err := q.compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FROM r_data_main d", "JOIN r_coll_main c", "JOIN r_objt_access ad", "JOIN r_user_main u"} {
		if !strings.Contains(sqlText, want) {
			t.Errorf("%q lacks %q", sqlText, want)
		}
	}
}

func TestExpectedDigestReplacesNulBytes(t *testing.T) {
	for i := 0; i < 200; i++ {
		d := expectedDigest(newChallenge(), "pw")
		if bytes.IndexByte(d, 0) >= 0 {
			t.Fatal("digest holds a NUL byte")
		}
	}
}
