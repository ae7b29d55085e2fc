package flightsql

// Metadata calls: one catalog (the warehouse), its namespaces as schemas,
// and the tables the caller may read (the same check a Plan makes), with
// their Arrow schemas when asked.

import (
	"context"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// oneRecord streams one record built by fill over builders of sch.
func (s *Server) oneRecord(sch *arrow.Schema, fill func(b *array.RecordBuilder) error) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.Alloc, sch)
	defer b.Release()
	if err := fill(b); err != nil {
		return nil, nil, grpcutil.ToStatus(err)
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: b.NewRecordBatch()}
	close(ch)
	return sch, ch, nil
}

func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(desc, desc.Cmd, schema_ref.Catalogs), nil
}

// DoGetCatalogs lists the warehouse.
func (s *Server) DoGetCatalogs(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if _, err := callerOf(ctx); err != nil {
		return nil, nil, err
	}
	return s.oneRecord(schema_ref.Catalogs, func(b *array.RecordBuilder) error {
		b.Field(0).(*array.StringBuilder).Append(s.warehouse())
		return nil
	})
}

func (s *Server) warehouse() string {
	return s.cfg.Endpoints.Defaults().Warehouse
}

func (s *Server) GetFlightInfoSchemas(_ context.Context, _ afsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(desc, desc.Cmd, schema_ref.DBSchemas), nil
}

// namespaces lists every namespace (nested ones dotted), at most
// maxListedTables.
func (s *Server) namespaces(ctx context.Context, ses *session) ([]string, error) {
	conn, err := s.connectorFor(ctx, ses)
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		list, err := conn.Catalog().ListNamespaces(ctx, parent)
		if err != nil {
			if len(parent) > 0 || notVisible(err) {
				// a catalog without nested namespaces, or a warehouse the
				// caller's identity may not list: nothing to show
				return nil
			}
			return perr.New(perr.Unavailable, "list namespaces: %v", err)
		}
		for _, ns := range list {
			if len(out) >= maxListedTables {
				return nil
			}
			out = append(out, strings.Join(ns, "."))
			if len(ns) > len(parent) && len(ns) < 8 {
				if err := walk(ns); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(nil)
}

// DoGetDBSchemas lists the namespaces matching the filter.
func (s *Server) DoGetDBSchemas(ctx context.Context, cmd afsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ses, err := callerOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	if c := cmd.GetCatalog(); c != nil && *c != "" && *c != s.warehouse() {
		return s.oneRecord(schema_ref.DBSchemas, func(*array.RecordBuilder) error { return nil })
	}
	match, err := likeMatcher(cmd.GetDBSchemaFilterPattern())
	if err != nil {
		return nil, nil, err
	}
	nss, err := s.namespaces(ctx, ses)
	if err != nil {
		return nil, nil, grpcutil.ToStatus(err)
	}
	return s.oneRecord(schema_ref.DBSchemas, func(b *array.RecordBuilder) error {
		for _, ns := range nss {
			if match(ns) {
				b.Field(0).(*array.StringBuilder).Append(s.warehouse())
				b.Field(1).(*array.StringBuilder).Append(ns)
			}
		}
		return nil
	})
}

func (s *Server) GetFlightInfoTables(_ context.Context, cmd afsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return s.flightInfo(desc, desc.Cmd, schema_ref.TablesWithIncludedSchema), nil
	}
	return s.flightInfo(desc, desc.Cmd, schema_ref.Tables), nil
}

// DoGetTables lists the tables the caller may read that match the
// filters, with their Arrow schemas when asked.
func (s *Server) DoGetTables(ctx context.Context, cmd afsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ses, err := callerOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	sch := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		sch = schema_ref.TablesWithIncludedSchema
	}
	if c := cmd.GetCatalog(); c != nil && *c != "" && *c != s.warehouse() {
		return s.oneRecord(sch, func(*array.RecordBuilder) error { return nil })
	}
	if types := cmd.GetTableTypes(); len(types) > 0 {
		found := false
		for _, t := range types {
			found = found || strings.EqualFold(t, catalogTableType)
		}
		if !found {
			return s.oneRecord(sch, func(*array.RecordBuilder) error { return nil })
		}
	}
	nsMatch, err := likeMatcher(cmd.GetDBSchemaFilterPattern())
	if err != nil {
		return nil, nil, err
	}
	tableMatch, err := likeMatcher(cmd.GetTableNameFilterPattern())
	if err != nil {
		return nil, nil, err
	}
	conn, err := s.connectorFor(ctx, ses)
	if err != nil {
		return nil, nil, grpcutil.ToStatus(err)
	}
	nss, err := s.namespaces(ctx, ses)
	if err != nil {
		return nil, nil, grpcutil.ToStatus(err)
	}
	return s.oneRecord(sch, func(b *array.RecordBuilder) error {
		listed := 0
		for _, ns := range nss {
			if !nsMatch(ns) {
				continue
			}
			for ident, err := range conn.Catalog().ListTables(ctx, table.Identifier(strings.Split(ns, "."))) {
				if err != nil {
					break // a namespace that vanished, or one the catalog refuses to list
				}
				name := ident[len(ident)-1]
				if !tableMatch(name) || listed >= maxListedTables {
					continue
				}
				if ses.caller.MayReadTable(s.warehouse(), strings.ReplaceAll(ns, ".", "/"), name) != nil {
					continue // tables the caller may not read are not shown
				}
				var schemaBytes []byte
				if cmd.GetIncludeSchema() {
					ts, err := conn.TableSchema(ctx, ns+"."+name, 0)
					if err != nil {
						continue
					}
					as, err := table.SchemaToArrowSchema(ts, nil, true, false)
					if err != nil {
						continue
					}
					schemaBytes = flight.SerializeSchema(as, s.Alloc)
				}
				listed++
				b.Field(0).(*array.StringBuilder).Append(s.warehouse())
				b.Field(1).(*array.StringBuilder).Append(ns)
				b.Field(2).(*array.StringBuilder).Append(name)
				b.Field(3).(*array.StringBuilder).Append(catalogTableType)
				if cmd.GetIncludeSchema() {
					b.Field(4).(*array.BinaryBuilder).Append(schemaBytes)
				}
			}
		}
		return nil
	})
}

func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(desc, desc.Cmd, schema_ref.TableTypes), nil
}

// DoGetTableTypes: Iceberg tables only.
func (s *Server) DoGetTableTypes(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if _, err := callerOf(ctx); err != nil {
		return nil, nil, err
	}
	return s.oneRecord(schema_ref.TableTypes, func(b *array.RecordBuilder) error {
		b.Field(0).(*array.StringBuilder).Append(catalogTableType)
		return nil
	})
}

func (s *Server) GetFlightInfoPrimaryKeys(_ context.Context, _ afsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.flightInfo(desc, desc.Cmd, schema_ref.PrimaryKeys), nil
}

// DoGetPrimaryKeys: Iceberg tables declare none (identifier fields are
// not enforced keys), so the answer is empty.
func (s *Server) DoGetPrimaryKeys(ctx context.Context, _ afsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if _, err := callerOf(ctx); err != nil {
		return nil, nil, err
	}
	return s.oneRecord(schema_ref.PrimaryKeys, func(*array.RecordBuilder) error { return nil })
}

// notVisible: the Iceberg catalog's answer to an identity that may not
// see the warehouse (it answers as if the table bucket did not exist).
func notVisible(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "NoSuchNamespaceException") || strings.Contains(msg, "Forbidden") || strings.Contains(msg, "NotAuthorized")
}

// likeMatcher matches names against a Flight SQL filter pattern (SQL LIKE:
// % any run, _ one character); nil or empty matches everything.
func likeMatcher(pattern *string) (func(string) bool, error) {
	if pattern == nil || *pattern == "" || *pattern == "%" {
		return func(string) bool { return true }, nil
	}
	if len(*pattern) > 1024 {
		return nil, status.Error(codes.InvalidArgument, "filter pattern longer than 1024 bytes")
	}
	var re strings.Builder
	re.WriteString("^")
	for _, r := range *pattern {
		switch r {
		case '%':
			re.WriteString(".*")
		case '_':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "filter pattern: %v", err)
	}
	return rx.MatchString, nil
}
