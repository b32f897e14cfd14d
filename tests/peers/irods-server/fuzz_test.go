package main

// Fuzz targets for what the peer parses from the wire: frames (header
// length, MsgHeader_PI, section lengths) and packing-instruction XML, and
// GenQuery's condition and GenQuery2 language. Run with
// `go test -fuzz=FuzzReadMessage` (scripts/fuzz runs each for a bounded time).

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func FuzzReadMessage(f *testing.F) {
	f.Add(framed("<MsgHeader_PI><type>RODS_API_REQ</type><msgLen>3</msgLen><errorLen>0</errorLen>"+
		"<bsLen>0</bsLen><intInfo>633</intInfo></MsgHeader_PI>", []byte("abc")))
	f.Add([]byte{0, 0, 0, 4, '<', 'a', '>', 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for i := 0; i < 4; i++ {
			m, err := readMessage(r)
			if err != nil {
				return
			}
			if len(m.Msg) > maxMsgBytes || len(m.Bs) > maxBsBytes {
				t.Fatalf("section over its bound")
			}
			if len(m.Msg) > 0 {
				if n, err := parseXML(m.Msg); err == nil {
					n.KeyVals()
					n.Int("x")
				}
			}
		}
	})
}

func FuzzParseXML(f *testing.F) {
	f.Add([]byte("<DataObjInp_PI><objPath>/z/a</objPath><KeyValPair_PI><ssLen>1</ssLen><keyWord>k</keyWord>" +
		"<svalue>v</svalue></KeyValPair_PI></DataObjInp_PI>"))
	f.Add([]byte("<BinBytesBuf_PI><buflen>2</buflen><buf>e30=</buf></BinBytesBuf_PI>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseXML(data)
		if err != nil {
			return
		}
		n.KeyVals()
		n.Base64Buf()
		n.All("inx")
	})
}

func FuzzGenQuery2(f *testing.F) {
	f.Add("select DATA_ID, DATA_NAME where COLL_NAME = '/z/h' and DATA_ID > '5' order by DATA_ID limit 10")
	f.Add("select max(DATA_MODIFY_TIME) where COLL_NAME like '/z/%' or not (DATA_SIZE between '1' and '2')")
	f.Add("select USER_ID where USER_ID in ('1', '2') and USER_TYPE != 'rodsgroup'")
	f.Fuzz(func(t *testing.T, text string) {
		s := &session{}
		q, err := s.parseGenQuery2(text)
		if err != nil {
			return
		}
		sqlText, err := q.compile()
		if err != nil {
			return
		}
		// Client text reaches SQL only as bound parameters: one per
		// placeholder.
		if n := strings.Count(sqlText, "?"); n != len(q.args) {
			t.Fatalf("%d placeholders, %d arguments: %s", n, len(q.args), sqlText)
		}
	})
}
