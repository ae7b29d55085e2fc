package connector

import (
	"context"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
)

// TableSchema is the schema of table at snapshot (0: current), from the
// connector's cached metadata when it has it (callers that then read are
// checked against the current version by the read itself).
func (c *Connector) TableSchema(ctx context.Context, table string, snapshot int64) (*iceberg.Schema, error) {
	p, err := c.prepare(ctx, Query{Table: table, Snapshot: snapshot}, true)
	if err != nil {
		return nil, err
	}
	return p.schema, nil
}

// Catalog is the Iceberg REST catalog the connector reads, with its
// caller's credentials (listing namespaces and tables).
func (c *Connector) Catalog() *rest.Catalog { return c.cat }
