package main

// GenQuery (702, ids and condition strings) and GenQuery2 (10221, a small
// SQL-like language) both compile to one query shape, then to SQL with
// bound parameters: no client text is ever pasted into SQL.

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

type selectItem struct {
	col *column
	agg string // "", MIN, MAX, SUM, AVG, COUNT
}

type orderItem struct {
	col  *column
	desc bool
}

type gquery struct {
	selects    []selectItem
	conds      []string
	args       []any
	orders     []orderItem
	distinct   bool
	upper      bool // GenQuery's UPPER_CASE_WHERE
	limit      int  // 0: none
	offset     int
	used       map[string]bool
	totalCount bool
}

func newQuery() *gquery { return &gquery{distinct: true, used: map[string]bool{}} }

// --- lexer shared by GenQuery condition strings and GenQuery2 ---

type token struct {
	kind string // word, str, num, op, punct
	text string
}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		ch := rune(s[i])
		switch {
		case unicode.IsSpace(ch):
			i++
		case ch == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated string in %q", s)
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, token{"str", b.String()})
			i = j + 1
		case ch == '(' || ch == ')' || ch == ',':
			out = append(out, token{"punct", string(ch)})
			i++
		case strings.ContainsRune("=<>!|&", ch):
			j := i + 1
			for j < len(s) && strings.ContainsRune("=<>|&", rune(s[j])) {
				j++
			}
			out = append(out, token{"op", s[i:j]})
			i = j
		case unicode.IsDigit(ch) || ch == '-' || ch == '.':
			j := i + 1
			for j < len(s) && (unicode.IsDigit(rune(s[j])) || s[j] == '.') {
				j++
			}
			out = append(out, token{"num", s[i:j]})
			i = j
		case unicode.IsLetter(ch) || ch == '_':
			j := i + 1
			for j < len(s) && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])) || s[j] == '_') {
				j++
			}
			out = append(out, token{"word", s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q in %q", ch, s)
		}
	}
	return out, nil
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{}
}
func (p *parser) next() token { t := p.peek(); p.pos++; return t }
func (p *parser) isWord(w string) bool {
	t := p.peek()
	return t.kind == "word" && strings.EqualFold(t.text, w)
}
func (p *parser) acceptWord(w string) bool {
	if p.isWord(w) {
		p.pos++
		return true
	}
	return false
}
func (p *parser) expectPunct(c string) error {
	if t := p.next(); t.kind != "punct" || t.text != c {
		return fmt.Errorf("expected %q, got %q", c, t.text)
	}
	return nil
}
func (p *parser) value() (string, error) {
	t := p.next()
	if t.kind != "str" && t.kind != "num" {
		return "", fmt.Errorf("expected a value, got %q", t.text)
	}
	return t.text, nil
}

// predicate parses one comparison against col: = 'x', like 'x', in ('a',
// 'b'), between 'a' 'b' (GenQuery) or between 'a' and 'b' (GenQuery2),
// is [not] null, begin_of, parent_of.
func (q *gquery) predicate(p *parser, col *column) (string, error) {
	expr := col.expr
	wrap := func(v string) (string, any) {
		if q.upper {
			return "UPPER(?)", strings.ToUpper(v)
		}
		return "?", v
	}
	if q.upper {
		expr = "UPPER(" + expr + ")"
	}
	not := p.acceptWord("not")
	t := p.peek()
	switch {
	case t.kind == "op":
		p.next()
		op := t.text
		if op == "==" {
			op = "="
		}
		if op == "!=" {
			op = "<>"
		}
		switch op {
		case "=", "<>", "<", "<=", ">", ">=":
		default:
			return "", fmt.Errorf("unknown operator %q", op)
		}
		v, err := p.value()
		if err != nil {
			return "", err
		}
		ph, a := wrap(v)
		q.args = append(q.args, a)
		return notIf(not, expr+" "+op+" "+ph), nil
	case p.acceptWord("like"):
		v, err := p.value()
		if err != nil {
			return "", err
		}
		ph, a := wrap(v)
		q.args = append(q.args, a)
		return notIf(not, expr+" LIKE "+ph), nil
	case p.acceptWord("in"):
		if err := p.expectPunct("("); err != nil {
			return "", err
		}
		var phs []string
		for {
			v, err := p.value()
			if err != nil {
				return "", err
			}
			ph, a := wrap(v)
			phs = append(phs, ph)
			q.args = append(q.args, a)
			if t := p.next(); t.text == ")" {
				break
			} else if t.text != "," {
				return "", fmt.Errorf("expected , or ) in list, got %q", t.text)
			}
		}
		return notIf(not, expr+" IN ("+strings.Join(phs, ", ")+")"), nil
	case p.acceptWord("between"):
		lo, err := p.value()
		if err != nil {
			return "", err
		}
		p.acceptWord("and")
		hi, err := p.value()
		if err != nil {
			return "", err
		}
		ph1, a1 := wrap(lo)
		ph2, a2 := wrap(hi)
		q.args = append(q.args, a1, a2)
		return notIf(not, expr+" BETWEEN "+ph1+" AND "+ph2), nil
	case p.acceptWord("is"):
		isNot := p.acceptWord("not")
		if !p.acceptWord("null") {
			return "", fmt.Errorf("expected null after is")
		}
		if isNot {
			return expr + " IS NOT NULL", nil
		}
		return expr + " IS NULL", nil
	case p.acceptWord("begin_of"):
		// v begins with the column's value: the column is a prefix of v.
		return q.prefixOf(p, col, "%")
	case p.acceptWord("parent_of"):
		return q.prefixOf(p, col, "/%")
	}
	return "", fmt.Errorf("unknown condition at %q", t.text)
}

// prefixOf reads the condition's value v and matches rows whose column,
// followed by `rest` (a LIKE pattern), matches v: the column is a prefix of v.
func (q *gquery) prefixOf(p *parser, col *column, rest string) (string, error) {
	v, err := p.value()
	if err != nil {
		return "", err
	}
	q.args = append(q.args, v)
	return "? LIKE " + col.expr + " || '" + rest + "'", nil
}

func notIf(not bool, s string) string {
	if not {
		return "NOT (" + s + ")"
	}
	return s
}

// --- GenQuery (702) ---

func (s *session) parseGenQuery1(body *node) (*gquery, int, int, error) {
	q := newQuery()
	opts := body.Int("options")
	q.distinct = opts&0x40 == 0
	q.upper = opts&0x200 != 0
	q.totalCount = opts&0x20 != 0
	sel := body.Child("InxIvalPair_PI")
	inx, vals := sel.All("inx"), sel.All("ivalue")
	if len(inx) == 0 || len(inx) != len(vals) {
		return nil, 0, 0, fmt.Errorf("GenQuery selects no columns")
	}
	aggs := map[int64]string{2: "MIN", 3: "MAX", 4: "SUM", 5: "AVG", 6: "COUNT"}
	for i, n := range inx {
		id, _ := strconv.Atoi(strings.TrimSpace(n.Text))
		col := columnsByID[id]
		if col == nil {
			return nil, 0, 0, fmt.Errorf("unknown GenQuery column %d", id)
		}
		v, _ := strconv.ParseInt(strings.TrimSpace(vals[i].Text), 10, 64)
		q.selects = append(q.selects, selectItem{col: col, agg: aggs[v&0x3f]})
		q.used[col.node] = true
		if v&0x400 != 0 {
			q.orders = append(q.orders, orderItem{col: col})
		} else if v&0x800 != 0 {
			q.orders = append(q.orders, orderItem{col: col, desc: true})
		}
	}
	conds := body.Child("InxValPair_PI")
	cinx, cvals := conds.All("inx"), conds.All("svalue")
	for i, n := range cinx {
		id, _ := strconv.Atoi(strings.TrimSpace(n.Text))
		col := columnsByID[id]
		if col == nil {
			return nil, 0, 0, fmt.Errorf("unknown GenQuery condition column %d", id)
		}
		if i >= len(cvals) {
			return nil, 0, 0, fmt.Errorf("condition on column %d has no value", id)
		}
		toks, err := lex(cvals[i].Text)
		if err != nil {
			return nil, 0, 0, err
		}
		p := &parser{toks: toks}
		var alts []string
		for {
			sqlText, err := q.predicate(p, col)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("condition %q on %s: %v", cvals[i].Text, col.name, err)
			}
			alts = append(alts, sqlText)
			if t := p.peek(); t.kind == "op" && (t.text == "||" || t.text == "&&") {
				p.next()
				continue
			}
			break
		}
		if p.pos != len(toks) {
			return nil, 0, 0, fmt.Errorf("condition %q on %s: trailing %q", cvals[i].Text, col.name, p.peek().text)
		}
		q.conds = append(q.conds, "("+strings.Join(alts, " OR ")+")")
		q.used[col.node] = true
	}
	return q, int(body.Int("maxRows")), int(body.Int("continueInx")), nil
}

type pagedQuery struct {
	key    string
	offset int
}

func genQuery1(s *session, _ *message, body *node) (reply, error) {
	q, maxRows, cont, err := s.parseGenQuery1(body)
	if err != nil {
		s.logf("rejected GenQuery: %v", err)
		return reply{}, fail(CAT_INVALID_ARGUMENT, "%v", err)
	}
	sqlText, err := q.compile()
	if err != nil {
		return reply{}, fail(CAT_INVALID_ARGUMENT, "%v", err)
	}
	key := fmt.Sprint(sqlText, q.args)
	offset := int(body.Int("partialStartIndex"))
	if cont > 0 {
		pq := s.queries[cont]
		if pq == nil || pq.key != key {
			return reply{}, fail(CAT_INVALID_ARGUMENT, "continueInx %d does not match an open query", cont)
		}
		delete(s.queries, cont)
		offset = pq.offset
	}
	if maxRows <= 0 {
		return reply{}, fail(CAT_NO_ROWS_FOUND, "query closed")
	}
	if maxRows > 100000 {
		maxRows = 100000
	}
	rows, err := s.srv.cat.run(sqlText+fmt.Sprintf(" LIMIT %d OFFSET %d", maxRows+1, offset), q.args, len(q.selects))
	if err != nil {
		s.logf("GenQuery SQL failed: %v (%s)", err, sqlText)
		return reply{}, fail(CAT_SQL_ERR, "%v", err)
	}
	if len(rows) == 0 {
		return reply{}, fail(CAT_NO_ROWS_FOUND, "no rows found")
	}
	next := 0
	if len(rows) > maxRows {
		rows = rows[:maxRows]
		next = s.nextQuery
		s.nextQuery++
		if len(s.queries) > 256 { // a client that never closes its queries
			s.queries = map[int]*pagedQuery{}
		}
		s.queries[next] = &pagedQuery{key: key, offset: offset + maxRows}
	}
	total := 0
	if q.totalCount {
		s.srv.cat.row(s.srv.cat.db, "SELECT COUNT(*) FROM ("+sqlText+") t", q.args...).Scan(&total)
	}
	return reply{msg: pack("GenQueryOut_PI", func(b *builder) {
		b.int("rowCnt", int64(len(rows)))
		b.int("attriCnt", int64(len(q.selects)))
		b.int("continueInx", int64(next))
		b.int("totalRowCount", int64(total))
		for i, sel := range q.selects {
			b.nested("SqlResult_PI", func(b *builder) {
				b.int("attriInx", int64(sel.col.id))
				b.int("reslen", 2700)
				for _, r := range rows {
					b.str("value", r[i])
				}
			})
		}
	})}, nil
}

// compile picks the joined tables (the smallest subtree of tableNodes
// holding every used alias) and writes the SQL.
func (q *gquery) compile() (string, error) {
	parentOf := func(n string) string {
		if n == "u" {
			switch {
			case q.used["ac"] && !q.used["ad"]:
				return "ac"
			case q.used["ad"] || q.used["d"] || q.used["c"]:
				if q.used["c"] && !q.used["d"] {
					return "ac"
				}
				return "ad"
			}
			return ""
		}
		return tableNodes[n].parent
	}
	pathToRoot := func(n string) []string {
		var p []string
		for ; n != ""; n = parentOf(n) {
			p = append(p, n)
		}
		return p
	}
	var used []string
	for n := range q.used {
		used = append(used, n)
	}
	sort.Strings(used)
	if len(used) == 0 {
		return "", fmt.Errorf("no columns")
	}
	if q.used["z"] && len(used) > 1 {
		return "", fmt.Errorf("zone columns join no other table")
	}
	// The lowest common ancestor: the deepest node on every path.
	common := pathToRoot(used[0])
	for _, n := range used[1:] {
		on := map[string]bool{}
		for _, a := range pathToRoot(n) {
			on[a] = true
		}
		var keep []string
		for _, a := range common {
			if on[a] {
				keep = append(keep, a)
			}
		}
		common = keep
	}
	if len(common) == 0 {
		return "", fmt.Errorf("columns from unrelated tables")
	}
	root := common[0]
	for !tableNodes[root].root {
		root = parentOf(root)
	}
	joined := map[string]bool{root: true}
	var joins []string
	for _, n := range used {
		var chain []string
		for a := n; !joined[a]; a = parentOf(a) {
			if a == "" {
				return "", fmt.Errorf("cannot join %s", n)
			}
			chain = append(chain, a)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			t := tableNodes[chain[i]]
			on := t.on
			if chain[i] == "u" {
				on = "u.user_id = " + parentOf("u") + ".user_id"
			}
			// "JOIN first ON cond JOIN rest...": the companion tables
			// follow the join condition.
			first, rest, _ := strings.Cut(t.from, " JOIN ")
			j := "JOIN " + first + " ON " + on
			if rest != "" {
				j += " JOIN " + rest
			}
			joins = append(joins, j)
			joined[chain[i]] = true
		}
	}
	var sel, group []string
	hasAgg := false
	for _, s := range q.selects {
		if s.agg != "" {
			hasAgg = true
			sel = append(sel, s.agg+"("+s.col.expr+")")
		} else {
			sel = append(sel, s.col.expr)
			group = append(group, s.col.expr)
		}
	}
	b := "SELECT "
	if q.distinct && !hasAgg {
		b += "DISTINCT "
	}
	b += strings.Join(sel, ", ") + " FROM " + tableNodes[root].from
	if len(joins) > 0 {
		b += " " + strings.Join(joins, " ")
	}
	conds := q.conds
	if tableNodes[root].where != "" {
		conds = append([]string{tableNodes[root].where}, conds...)
	}
	if len(conds) > 0 {
		b += " WHERE " + strings.Join(conds, " AND ")
	}
	if hasAgg && len(group) > 0 {
		b += " GROUP BY " + strings.Join(group, ", ")
	}
	// Without an explicit order, order by the selected columns: paging
	// through a listing is then stable.
	var order []string
	for _, o := range q.orders {
		e := o.col.expr
		if o.desc {
			e += " DESC"
		}
		order = append(order, e)
	}
	if len(order) == 0 && !hasAgg {
		for i := range sel {
			order = append(order, strconv.Itoa(i+1))
		}
	}
	if len(order) > 0 {
		b += " ORDER BY " + strings.Join(order, ", ")
	}
	return b, nil
}

// run executes a query and returns every row as strings (NULL as "").
func (c *catalog) run(sqlText string, args []any, ncols int) ([][]string, error) {
	rows, err := c.db.Query(c.rebind(sqlText), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	vals := make([]sql.NullString, ncols)
	ptrs := make([]any, ncols)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r := make([]string, ncols)
		for i, v := range vals {
			r[i] = v.String
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// --- GenQuery2 (10221) ---

func (s *session) parseGenQuery2(text string) (*gquery, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	q := newQuery()
	if !p.acceptWord("select") {
		return nil, fmt.Errorf("query must start with select")
	}
	if p.acceptWord("no") {
		if !p.acceptWord("distinct") {
			return nil, fmt.Errorf("expected distinct after no")
		}
		q.distinct = false
	} else {
		p.acceptWord("distinct")
	}
	colNamed := func(name string) (*column, error) {
		c := columnsByName[strings.ToUpper(name)]
		if c == nil {
			return nil, fmt.Errorf("unknown column %s", name)
		}
		q.used[c.node] = true
		return c, nil
	}
	for {
		t := p.next()
		if t.kind != "word" {
			return nil, fmt.Errorf("expected a column, got %q", t.text)
		}
		item := selectItem{}
		if nt := p.peek(); nt.kind == "punct" && nt.text == "(" {
			fn := strings.ToUpper(t.text)
			switch fn {
			case "MIN", "MAX", "SUM", "AVG", "COUNT":
			default:
				return nil, fmt.Errorf("unknown function %s", t.text)
			}
			p.next()
			ct := p.next()
			if item.col, err = colNamed(ct.text); err != nil {
				return nil, err
			}
			if err := p.expectPunct(")"); err != nil {
				return nil, err
			}
			item.agg = fn
		} else if item.col, err = colNamed(t.text); err != nil {
			return nil, err
		}
		q.selects = append(q.selects, item)
		if nt := p.peek(); nt.kind == "punct" && nt.text == "," {
			p.next()
			continue
		}
		break
	}
	if p.acceptWord("where") {
		cond, err := s.gq2Cond(p, q, colNamed)
		if err != nil {
			return nil, err
		}
		q.conds = append(q.conds, cond)
	}
	for p.pos < len(p.toks) {
		switch {
		case p.acceptWord("order"):
			if !p.acceptWord("by") {
				return nil, fmt.Errorf("expected by after order")
			}
			for {
				c, err := colNamed(p.next().text)
				if err != nil {
					return nil, err
				}
				o := orderItem{col: c}
				if p.acceptWord("desc") {
					o.desc = true
				} else {
					p.acceptWord("asc")
				}
				q.orders = append(q.orders, o)
				if nt := p.peek(); nt.kind == "punct" && nt.text == "," {
					p.next()
					continue
				}
				break
			}
		case p.acceptWord("limit"):
			n, err := strconv.Atoi(p.next().text)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad limit")
			}
			q.limit = n
		case p.acceptWord("offset"):
			n, err := strconv.Atoi(p.next().text)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad offset")
			}
			q.offset = n
		case p.acceptWord("group"):
			if !p.acceptWord("by") {
				return nil, fmt.Errorf("expected by after group")
			}
			for {
				if _, err := colNamed(p.next().text); err != nil {
					return nil, err
				}
				if nt := p.peek(); nt.kind == "punct" && nt.text == "," {
					p.next()
					continue
				}
				break
			}
		default:
			return nil, fmt.Errorf("unexpected %q", p.peek().text)
		}
	}
	return q, nil
}

func (s *session) gq2Cond(p *parser, q *gquery, colNamed func(string) (*column, error)) (string, error) {
	var ors []string
	for {
		var ands []string
		for {
			not := p.acceptWord("not")
			var part string
			if t := p.peek(); t.kind == "punct" && t.text == "(" {
				p.next()
				inner, err := s.gq2Cond(p, q, colNamed)
				if err != nil {
					return "", err
				}
				if err := p.expectPunct(")"); err != nil {
					return "", err
				}
				part = "(" + inner + ")"
			} else {
				t := p.next()
				if t.kind != "word" {
					return "", fmt.Errorf("expected a column in where, got %q", t.text)
				}
				c, err := colNamed(t.text)
				if err != nil {
					return "", err
				}
				if part, err = q.predicate(p, c); err != nil {
					return "", err
				}
			}
			ands = append(ands, notIf(not, part))
			if !p.acceptWord("and") {
				break
			}
		}
		ors = append(ors, strings.Join(ands, " AND "))
		if !p.acceptWord("or") {
			break
		}
	}
	return strings.Join(ors, " OR "), nil
}

func genQuery2(s *session, _ *message, body *node) (reply, error) {
	text := body.Str("query_string")
	q, err := s.parseGenQuery2(text)
	if err != nil {
		s.logf("rejected GenQuery2 %q: %v", text, err)
		return reply{}, fail(SYS_INVALID_INPUT_PARAM, "GenQuery2 %q: %v", text, err)
	}
	sqlText, err := q.compile()
	if err != nil {
		return reply{}, fail(SYS_INVALID_INPUT_PARAM, "GenQuery2 %q: %v", text, err)
	}
	limit := q.limit
	if limit == 0 || limit > 100000 {
		limit = 100000
	}
	sqlText += fmt.Sprintf(" LIMIT %d OFFSET %d", limit, q.offset)
	if body.Int("sql_only") != 0 {
		return reply{msg: strPI(sqlText)}, nil
	}
	rows, err := s.srv.cat.run(sqlText, q.args, len(q.selects))
	if err != nil {
		s.logf("GenQuery2 SQL failed: %v (%s)", err, sqlText)
		return reply{}, fail(CAT_SQL_ERR, "%v", err)
	}
	if rows == nil {
		rows = [][]string{}
	}
	out, _ := json.Marshal(rows)
	return reply{msg: strPI(string(out))}, nil
}

// specificQuery serves the one specific query irods4j needs, ShowCollAcls.
func specificQuery(s *session, _ *message, body *node) (reply, error) {
	name := body.Str("sql")
	if name != "ShowCollAcls" {
		return reply{}, fail(CAT_UNKNOWN_SPECIFIC_QUERY, "specific query %q is not served", name)
	}
	rows, err := s.srv.cat.run(`SELECT u.user_name, u.zone_name, t.token_name, u.user_type_name
		FROM r_coll_main c JOIN r_objt_access a ON a.object_id = c.coll_id
		JOIN r_user_main u ON u.user_id = a.user_id
		JOIN r_tokn_main t ON t.token_namespace = 'access_type' AND t.token_id = a.access_type_id
		WHERE c.coll_name = ? ORDER BY 1`, []any{body.Str("arg1")}, 4)
	if err != nil {
		return reply{}, err
	}
	if len(rows) == 0 {
		return reply{}, fail(CAT_NO_ROWS_FOUND, "no rows found")
	}
	return reply{msg: pack("GenQueryOut_PI", func(b *builder) {
		b.int("rowCnt", int64(len(rows)))
		b.int("attriCnt", 4)
		b.int("continueInx", 0)
		b.int("totalRowCount", int64(len(rows)))
		for i := 0; i < 4; i++ {
			b.nested("SqlResult_PI", func(b *builder) {
				b.int("attriInx", 0)
				b.int("reslen", 2700)
				for _, r := range rows {
					b.str("value", r[i])
				}
			})
		}
	})}, nil
}
