package main

// The catalog columns GenQuery (ids) and GenQuery2 (names) select, and how
// their tables join. Tables form a tree rooted at data objects: a query
// joins the smallest subtree that holds every column it names, as the
// iCAT's generated SQL does.

type column struct {
	id   int
	name string // GenQuery2 name
	node string // table alias that holds it
	expr string
}

type tableNode struct {
	from   string // "table alias" plus joins that always come with it
	parent string
	on     string // join condition to the parent
	root   bool   // may stand as the FROM of a query
	where  string // implied condition when it is the root
}

var tableNodes = map[string]tableNode{
	"d":  {from: "r_data_main d", root: true},
	"c":  {from: "r_coll_main c", parent: "d", on: "c.coll_id = d.coll_id", root: true},
	"r":  {from: "r_resc_main r", parent: "d", on: "r.resc_id = d.resc_id", root: true},
	"md": {from: "r_objt_metamap mmd JOIN r_meta_main md ON md.meta_id = mmd.meta_id", parent: "d", on: "mmd.object_id = d.data_id"},
	"ad": {from: "r_objt_access ad JOIN r_tokn_main adt ON adt.token_namespace = 'access_type' AND adt.token_id = ad.access_type_id",
		parent: "d", on: "ad.object_id = d.data_id", root: true},
	"mc": {from: "r_objt_metamap mmc JOIN r_meta_main mc ON mc.meta_id = mmc.meta_id", parent: "c", on: "mmc.object_id = c.coll_id"},
	"ac": {from: "r_objt_access ac JOIN r_tokn_main act ON act.token_namespace = 'access_type' AND act.token_id = ac.access_type_id",
		parent: "c", on: "ac.object_id = c.coll_id", root: true},
	"mr": {from: "r_objt_metamap mmr JOIN r_meta_main mr ON mr.meta_id = mmr.meta_id", parent: "r", on: "mmr.object_id = r.resc_id"},
	// u's parent is chosen per query: the access table in use, if any.
	"u":  {from: "r_user_main u", parent: "ad", on: "u.user_id = ad.user_id", root: true},
	"mu": {from: "r_objt_metamap mmu JOIN r_meta_main mu ON mu.meta_id = mmu.meta_id", parent: "u", on: "mmu.object_id = u.user_id"},
	"g": {from: "r_user_group ugm JOIN r_user_main g ON g.user_id = ugm.group_user_id", parent: "u", on: "ugm.user_id = u.user_id",
		root: false},
	"z": {from: "r_zone_main z", root: true},
}

const rescName = "(SELECT resc_name FROM r_resc_main WHERE resc_id = d.resc_id)"

var columns = []column{
	{101, "ZONE_ID", "z", "z.zone_id"}, {102, "ZONE_NAME", "z", "z.zone_name"},
	{103, "ZONE_TYPE", "z", "z.zone_type_name"}, {104, "ZONE_CONNECTION", "z", "z.zone_conn_string"},
	{105, "ZONE_COMMENT", "z", "z.r_comment"}, {106, "ZONE_CREATE_TIME", "z", "z.create_ts"},
	{107, "ZONE_MODIFY_TIME", "z", "z.modify_ts"},

	{201, "USER_ID", "u", "u.user_id"}, {202, "USER_NAME", "u", "u.user_name"},
	{203, "USER_TYPE", "u", "u.user_type_name"}, {204, "USER_ZONE", "u", "u.zone_name"},
	{206, "USER_INFO", "u", "u.user_info"}, {207, "USER_COMMENT", "u", "u.r_comment"},
	{208, "USER_CREATE_TIME", "u", "u.create_ts"}, {209, "USER_MODIFY_TIME", "u", "u.modify_ts"},

	{301, "RESC_ID", "r", "r.resc_id"}, {302, "RESC_NAME", "r", "r.resc_name"},
	{303, "RESC_ZONE_NAME", "r", "r.zone_name"}, {304, "RESC_TYPE_NAME", "r", "r.resc_type_name"},
	{305, "RESC_CLASS_NAME", "r", "r.resc_class_name"}, {306, "RESC_HOSTNAME", "r", "r.resc_net"},
	{307, "RESC_VAULT_PATH", "r", "r.resc_def_path"}, {308, "RESC_FREE_SPACE", "r", "''"},
	{310, "RESC_COMMENTS", "r", "''"}, {311, "RESC_CREATE_TIME", "r", "r.create_ts"},
	{312, "RESC_MODIFY_TIME", "r", "r.modify_ts"}, {313, "RESC_STATUS", "r", "r.resc_status"},
	{314, "RESC_FREE_SPACE_TIME", "r", "''"}, {315, "RESC_CHILDREN", "r", "''"},
	{316, "RESC_CONTEXT", "r", "r.resc_context"}, {317, "RESC_PARENT", "r", "r.resc_parent"},
	{318, "RESC_PARENT_CONTEXT", "r", "''"}, {319, "RESC_MODIFY_TIME_MILLIS", "r", "'000'"},

	{401, "DATA_ID", "d", "d.data_id"}, {402, "DATA_COLL_ID", "d", "d.coll_id"},
	{403, "DATA_NAME", "d", "d.data_name"}, {404, "DATA_REPL_NUM", "d", "d.data_repl_num"},
	{405, "DATA_VERSION", "d", "d.data_version"}, {406, "DATA_TYPE_NAME", "d", "d.data_type_name"},
	{407, "DATA_SIZE", "d", "d.data_size"}, {409, "DATA_RESC_NAME", "d", rescName},
	{410, "DATA_PATH", "d", "d.data_path"}, {411, "DATA_OWNER_NAME", "d", "d.data_owner_name"},
	{412, "DATA_OWNER_ZONE", "d", "d.data_owner_zone"}, {413, "DATA_REPL_STATUS", "d", "d.data_is_dirty"},
	{414, "DATA_STATUS", "d", "d.data_status"}, {415, "DATA_CHECKSUM", "d", "d.data_checksum"},
	{416, "DATA_EXPIRY", "d", "d.data_expiry_ts"}, {417, "DATA_MAP_ID", "d", "d.data_map_id"},
	{418, "DATA_COMMENTS", "d", "d.r_comment"}, {419, "DATA_CREATE_TIME", "d", "d.create_ts"},
	{420, "DATA_MODIFY_TIME", "d", "d.modify_ts"}, {421, "DATA_MODE", "d", "d.data_mode"},
	{422, "DATA_RESC_HIER", "d", rescName}, {423, "DATA_RESC_ID", "d", "d.resc_id"},
	{424, "DATA_ACCESS_TIME", "d", "d.access_ts"},

	{500, "COLL_ID", "c", "c.coll_id"}, {501, "COLL_NAME", "c", "c.coll_name"},
	{502, "COLL_PARENT_NAME", "c", "c.parent_coll_name"}, {503, "COLL_OWNER_NAME", "c", "c.coll_owner_name"},
	{504, "COLL_OWNER_ZONE", "c", "c.coll_owner_zone"}, {505, "COLL_MAP_ID", "c", "c.coll_map_id"},
	{506, "COLL_INHERITANCE", "c", "c.coll_inheritance"}, {507, "COLL_COMMENTS", "c", "c.r_comment"},
	{508, "COLL_CREATE_TIME", "c", "c.create_ts"}, {509, "COLL_MODIFY_TIME", "c", "c.modify_ts"},
	{510, "COLL_TYPE", "c", "c.coll_type"}, {511, "COLL_INFO1", "c", "c.coll_info1"},
	{512, "COLL_INFO2", "c", "c.coll_info2"},

	{700, "DATA_ACCESS_PERM_ID", "ad", "ad.access_type_id"}, {701, "DATA_ACCESS_PERM_NAME", "ad", "adt.token_name"},
	{702, "DATA_TOKEN_NAMESPACE", "ad", "adt.token_namespace"}, {703, "DATA_ACCESS_USER_ID", "ad", "ad.user_id"},
	{704, "DATA_ACCESS_DATA_ID", "ad", "ad.object_id"},
	{710, "COLL_ACCESS_PERM_ID", "ac", "ac.access_type_id"}, {711, "COLL_ACCESS_PERM_NAME", "ac", "act.token_name"},
	{712, "COLL_TOKEN_NAMESPACE", "ac", "act.token_namespace"}, {713, "COLL_ACCESS_USER_ID", "ac", "ac.user_id"},
	{714, "COLL_ACCESS_COLL_ID", "ac", "ac.object_id"},

	{900, "GROUP_ID", "g", "g.user_id"}, {901, "GROUP_NAME", "g", "g.user_name"},
}

func init() {
	meta := []struct {
		base           int
		prefix, alias string
	}{{600, "META_DATA", "md"}, {610, "META_COLL", "mc"}, {630, "META_RESC", "mr"}, {640, "META_USER", "mu"}}
	for _, m := range meta {
		columns = append(columns,
			column{m.base, m.prefix + "_ATTR_NAME", m.alias, m.alias + ".meta_attr_name"},
			column{m.base + 1, m.prefix + "_ATTR_VALUE", m.alias, m.alias + ".meta_attr_value"},
			column{m.base + 2, m.prefix + "_ATTR_UNITS", m.alias, m.alias + ".meta_attr_unit"},
			column{m.base + 3, m.prefix + "_ATTR_ID", m.alias, m.alias + ".meta_id"},
			column{m.base + 4, m.prefix + "_ATTR_CREATE_TIME", m.alias, "m" + m.alias + ".create_ts"},
			column{m.base + 5, m.prefix + "_ATTR_MODIFY_TIME", m.alias, "m" + m.alias + ".modify_ts"})
	}
	for i := range columns {
		columnsByID[columns[i].id] = &columns[i]
		columnsByName[columns[i].name] = &columns[i]
	}
	// GenQuery2 also knows a few other spellings.
	columnsByName["DATA_ACCESS_USER_NAME"] = &column{0, "DATA_ACCESS_USER_NAME", "u", "u.user_name"}
	columnsByName["DATA_ACCESS_USER_ZONE"] = &column{0, "DATA_ACCESS_USER_ZONE", "u", "u.zone_name"}
	columnsByName["USER_GROUP_ID"] = columnsByName["GROUP_ID"]
	columnsByName["USER_GROUP_NAME"] = columnsByName["GROUP_NAME"]
}

var (
	columnsByID   = map[int]*column{}
	columnsByName = map[string]*column{}
)
