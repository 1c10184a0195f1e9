package sqlstore

import (
	"bufio"
	"fmt"
	"io/fs"
	"strings"
)

// QueryNames are the queries every engine's SQL must define. An area of the store kept in its
// own files (queries_<area>.sql, <area>.go) appends its names from an init function there.
var QueryNames = []string{
	"ClusterCreate", "ClusterGetByName", "ClusterList", "ClusterUpdateHealth",
	"ClusterUpdateCredentials", "ClusterDelete", "ClusterCount",
	"OperatorCreate", "OperatorGetByName", "OperatorGetByID", "OperatorList", "OperatorCount",
	"OperatorVersionUpsert", "OperatorVersionList", "OperatorVersionListMany",
	"CRDSchemaInsert", "CRDSchemaList", "CRDList",
	"CRDApprovalCreate", "CRDApprovalList",
	"AuditInsert", "AuditList",
	"DeploymentInsert", "DeploymentClusterInsert", "DeploymentGet", "DeploymentLock",
	"DeploymentUpdate", "DeploymentClusterUpdate", "DeploymentList", "DeploymentClusterListMany",
	"DeploymentCountActive", "DeploymentCountByStatus", "DeploymentEventInsert", "DeploymentEventList",
	"ApprovalInsert", "ApprovalGet", "ApprovalGetForUpdate", "ApprovalList", "ApprovalSetStatus",
	"ApprovalExpire", "ApprovalDecisionInsert", "ApprovalDecisionListMany", "ApprovalMarkNotified",
	"DeploymentClaim", "DeploymentRenew", "DeploymentAdmitLock", "DeploymentCountRunning",
	"DeploymentCountQueued", "DeploymentAdmit", "LiveReleaseList",
	"OperatorHealthRecord", "OperatorHealthList", "OperatorHealthDelete",
	"LeaseAcquire", "LeaseRelease", "LeaseGet",
	// SchemaTableExists($1 table name) → one boolean: whether the migrations table exists.
	"SchemaTableExists",
}

// ParseQueries splits SQL text into named queries: each starts at a "-- name: X" line and runs to
// the next one; other comment lines are dropped, and a trailing semicolon is removed.
func ParseQueries(src string) (map[string]string, error) {
	out := map[string]string{}
	var name string
	var b strings.Builder
	flush := func() error {
		if name == "" {
			return nil
		}
		q := strings.TrimSpace(b.String())
		q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
		if q == "" {
			return fmt.Errorf("query %s is empty", name)
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("query %s is defined twice", name)
		}
		out[name] = q
		b.Reset()
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if n, ok := strings.CutPrefix(trimmed, "-- name:"); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			name = strings.TrimSpace(n)
			continue
		}
		if strings.HasPrefix(trimmed, "--") || trimmed == "" {
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("SQL before the first -- name: line: %q", trimmed)
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, sc.Err()
}

// parseQueryFS parses the files of fsys matching pattern (one file per area of the store) as one
// text, in name order; a name defined twice is an error.
func parseQueryFS(fsys fs.FS, pattern string) (map[string]string, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no SQL file matches %s", pattern)
	}
	var all strings.Builder
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		all.Write(b)
		all.WriteString("\n")
	}
	return ParseQueries(all.String())
}

// filterMarker is where a list query takes its filters; the query must have a WHERE before it.
const filterMarker = "/*filters*/"

// listQuery is the tiny builder for list filters: it appends "AND cond" clauses at the query's
// filter marker and a LIMIT at its end, numbering placeholders $n after the query's own.
type listQuery struct {
	conds []string
	args  []any
}

// newListQuery starts from the query's own arguments ($1..$len(args)).
func newListQuery(args ...any) *listQuery { return &listQuery{args: args} }

// where adds a condition; its one "?" becomes the argument's placeholder.
func (l *listQuery) where(cond string, arg any) {
	l.args = append(l.args, arg)
	l.conds = append(l.conds, strings.Replace(cond, "?", fmt.Sprintf("$%d", len(l.args)), 1))
}

// build returns the query with its filters and limit, and the arguments.
func (l *listQuery) build(query string, limit int) (string, []any) {
	q, _ := l.buildAll(query)
	l.args = append(l.args, limit)
	return q + fmt.Sprintf("\nLIMIT $%d", len(l.args)), l.args
}

// buildAll returns the query with its filters and no limit (lists bounded by the data, such as
// one row per operator and cluster), and the arguments.
func (l *listQuery) buildAll(query string) (string, []any) {
	var f string
	if len(l.conds) > 0 {
		f = " AND " + strings.Join(l.conds, " AND ")
	}
	return strings.Replace(query, filterMarker, f, 1), l.args
}
