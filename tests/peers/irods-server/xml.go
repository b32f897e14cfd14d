package main

// A small reader and writer for iRODS's XML packing instructions: a struct
// is an element whose children are its fields in declaration order, a
// repeated field is repeated siblings, a nested struct is a nested element.

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

const maxXMLDepth = 16

type node struct {
	Name     string
	Text     string
	Children []*node
}

// parseXML reads one element. iRODS clients write a few entities the Go
// decoder does not know (HTML's), so those are mapped before decoding.
func parseXML(data []byte) (*node, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.Entity = map[string]string{"nbsp": "\u00a0"}
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err != nil {
			if root != nil && len(stack) == 0 {
				return root, nil
			}
			return nil, fmt.Errorf("invalid XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxXMLDepth {
				return nil, fmt.Errorf("invalid XML: nested deeper than %d", maxXMLDepth)
			}
			n := &node{Name: t.Name.Local}
			if len(stack) > 0 {
				parent := stack[len(stack)-1]
				parent.Children = append(parent.Children, n)
			} else if root != nil {
				return nil, fmt.Errorf("invalid XML: more than one root element")
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return root, nil
			}
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(t)
			}
		}
	}
}

func (n *node) Child(name string) *node {
	if n == nil {
		return nil
	}
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func (n *node) All(name string) []*node {
	var out []*node
	if n == nil {
		return out
	}
	for _, c := range n.Children {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

func (n *node) Str(name string) string {
	if c := n.Child(name); c != nil {
		return c.Text
	}
	return ""
}

func (n *node) Int(name string) int64 {
	v, _ := strconv.ParseInt(strings.TrimSpace(n.Str(name)), 10, 64)
	return v
}

// KeyVals reads a KeyValPair_PI child: all keyWords first, then all svalues.
func (n *node) KeyVals() map[string]string {
	kv := map[string]string{}
	p := n.Child("KeyValPair_PI")
	if p == nil {
		return kv
	}
	keys, vals := p.All("keyWord"), p.All("svalue")
	for i, k := range keys {
		if i < len(vals) {
			kv[k.Text] = vals[i].Text
		} else {
			kv[k.Text] = ""
		}
	}
	return kv
}

// Base64Buf decodes a BinBytesBuf_PI's buf, dropping the NUL servers and
// clients sometimes append to JSON.
func (n *node) Base64Buf() ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(n.Str("buf")))
	if err != nil {
		return nil, fmt.Errorf("BinBytesBuf_PI buf is not base64: %v", err)
	}
	return bytes.TrimRight(raw, "\x00"), nil
}

// builder writes a packing instruction; fields are emitted in call order.
type builder struct{ b strings.Builder }

func pack(name string, fill func(*builder)) []byte {
	var bl builder
	bl.open(name)
	fill(&bl)
	bl.close(name)
	return []byte(bl.b.String())
}

func (bl *builder) open(name string)  { bl.b.WriteString("<" + name + ">") }
func (bl *builder) close(name string) { bl.b.WriteString("</" + name + ">\n") }

func (bl *builder) str(tag, v string) {
	bl.b.WriteString("<" + tag + ">")
	bl.b.WriteString(escapeXML(v))
	bl.b.WriteString("</" + tag + ">\n")
}

func (bl *builder) int(tag string, v int64) { bl.str(tag, strconv.FormatInt(v, 10)) }

func (bl *builder) nested(name string, fill func(*builder)) {
	bl.open(name)
	fill(bl)
	bl.close(name)
}

// escapeXML escapes like the iRODS server: &, < and > only, so quotes and
// back-ticks reach clients unchanged.
func escapeXML(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}

func binBytesBuf(payload []byte) []byte {
	return pack("BinBytesBuf_PI", func(b *builder) {
		b.int("buflen", int64(len(payload)))
		b.str("buf", base64.StdEncoding.EncodeToString(payload))
	})
}

func strPI(s string) []byte {
	return pack("STR_PI", func(b *builder) { b.str("myStr", s) })
}
