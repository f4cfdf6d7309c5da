package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

const datasetCols = `d.id, d.owner_id, u.name, d.name, d.public, d.metadata, d.created_at, d.last_pushed, d.trace_count`
const datasetFrom = ` FROM datasets d JOIN users u ON u.id = d.owner_id `

func scanDataset(row Row) (store.Dataset, error) {
	var d store.Dataset
	var meta string
	var created, pushed Time
	err := row.Scan(&d.ID, &d.OwnerID, &d.OwnerName, &d.Name, &d.Public, &meta, &created, &pushed, &d.TraceCount)
	d.Metadata = json.RawMessage(meta)
	d.CreatedAt, d.LastPushed = created.T, pushed.Ptr()
	return d, err
}

// CreateDataset adds a dataset; a name the owner already uses is ErrConflict.
func (s *Store) CreateDataset(ctx context.Context, d store.Dataset) (store.Dataset, error) {
	if err := storeutil.CheckName("dataset", d.Name); err != nil {
		return store.Dataset{}, s.errorf("create dataset: %w", err)
	}
	if !storeutil.ValidID(d.OwnerID) {
		return store.Dataset{}, s.notFound("create dataset: owner %q", d.OwnerID)
	}
	meta := json.RawMessage("{}")
	if d.Metadata != nil {
		var err error
		if meta, err = storeutil.CompactObject(d.Metadata, "dataset metadata"); err != nil {
			return store.Dataset{}, s.errorf("create dataset: %w", err)
		}
	}
	out := store.Dataset{ID: storeutil.NewID(), OwnerID: d.OwnerID, Name: d.Name, Public: d.Public, Metadata: meta, CreatedAt: storeutil.Now()}
	err := s.W.QueryRow(ctx, `INSERT INTO datasets (id, owner_id, name, public, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING (SELECT name FROM users WHERE id = $2)`,
		out.ID, out.OwnerID, out.Name, out.Public, string(meta), s.D.Time(out.CreatedAt)).Scan(&out.OwnerName)
	if err != nil {
		return store.Dataset{}, s.Fail(ctx, err, "create dataset %q", d.Name)
	}
	return out, nil
}

// Dataset finds a dataset by id.
func (s *Store) Dataset(ctx context.Context, id string) (store.Dataset, error) {
	if !storeutil.ValidID(id) {
		return store.Dataset{}, s.notFound("dataset %q", id)
	}
	d, err := scanDataset(s.R.QueryRow(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.id = $1`, id))
	if err != nil {
		return store.Dataset{}, s.Fail(ctx, err, "dataset %s", id)
	}
	return d, nil
}

// DatasetByName finds a dataset by owner and name.
func (s *Store) DatasetByName(ctx context.Context, ownerID, name string) (store.Dataset, error) {
	if !storeutil.ValidID(ownerID) {
		return store.Dataset{}, s.notFound("dataset %q of user %q", name, ownerID)
	}
	d, err := scanDataset(s.R.QueryRow(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.owner_id = $1 AND d.name = $2`, ownerID, name))
	if err != nil {
		return store.Dataset{}, s.Fail(ctx, err, "dataset %q of user %s", name, ownerID)
	}
	return d, nil
}

// ListDatasets lists the user's datasets and every public one, oldest first.
func (s *Store) ListDatasets(ctx context.Context, userID string) ([]store.Dataset, error) {
	if !storeutil.ValidID(userID) {
		userID = nobody // public ones only
	}
	rows, err := s.R.Query(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.owner_id = $1 OR d.public ORDER BY d.created_at, d.id`, userID)
	ds, err := collect(rows, err, scanDataset)
	if err != nil {
		return nil, s.Fail(ctx, err, "list datasets")
	}
	return ds, nil
}

// SetDatasetPublic makes a dataset public or private.
func (s *Store) SetDatasetPublic(ctx context.Context, id string, public bool) error {
	if !storeutil.ValidID(id) {
		return s.notFound("dataset %q", id)
	}
	n, err := s.W.Exec(ctx, `UPDATE datasets SET public = $2 WHERE id = $1`, id, public)
	if err != nil {
		return s.Fail(ctx, err, "set dataset %s public", id)
	}
	if n == 0 {
		return s.notFound("dataset %s", id)
	}
	return nil
}

// SetDatasetMetadata merges meta into, or replaces, a dataset's metadata.
func (s *Store) SetDatasetMetadata(ctx context.Context, id string, meta json.RawMessage, replace bool) (json.RawMessage, error) {
	if !storeutil.ValidID(id) {
		return nil, s.notFound("dataset %q", id)
	}
	if err := storeutil.CheckObject(meta, "dataset metadata", false); err != nil {
		return nil, s.errorf("set metadata of dataset %s: %w", id, err)
	}
	var out json.RawMessage
	err := s.Write(ctx, func(tx Querier) error {
		var old string
		if err := tx.QueryRow(ctx, `SELECT metadata FROM datasets WHERE id = $1`+s.D.ForUpdate, id).Scan(&old); err != nil {
			return err
		}
		var err error
		if replace {
			out, err = storeutil.CompactObject(meta, "dataset metadata")
		} else {
			out, err = storeutil.MergeObject(json.RawMessage(old), meta)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE datasets SET metadata = $1 WHERE id = $2`, string(out), id)
		return err
	})
	if err != nil {
		return nil, s.Fail(ctx, err, "set metadata of dataset %s", id)
	}
	return out, nil
}

const policyCols = `id, dataset_id, name, source, mode, created_at, updated_at`

func scanPolicy(row Row) (store.Policy, error) {
	var p store.Policy
	var created, updated Time
	err := row.Scan(&p.ID, &p.DatasetID, &p.Name, &p.Source, &p.Mode, &created, &updated)
	p.CreatedAt, p.UpdatedAt = created.T, updated.T
	return p, err
}

// checkPolicy checks what the store requires of a policy and returns its
// mode as stored.
func (s *Store) checkPolicy(p store.Policy, what string) (string, error) {
	if err := storeutil.CheckName("policy", p.Name); err != nil {
		return "", s.errorf("%s: %w", what, err)
	}
	if err := storeutil.CheckText("policy source", p.Source); err != nil {
		return "", s.errorf("%s: %w", what, err)
	}
	mode, err := storeutil.PolicyMode(p.Mode)
	if err != nil {
		return "", s.errorf("%s: %w", what, err)
	}
	if !storeutil.ValidID(p.DatasetID) {
		return "", s.notFound("%s: dataset %q", what, p.DatasetID)
	}
	return mode, nil
}

// SavePolicy creates a policy or, by (dataset, name), updates its source
// and mode ("" is log). A policy with an ID is updated by ID (which may
// rename it).
func (s *Store) SavePolicy(ctx context.Context, p store.Policy) (store.Policy, error) {
	mode, err := s.checkPolicy(p, "save policy")
	if err != nil {
		return store.Policy{}, err
	}
	now := s.D.Time(storeutil.Now())
	var out store.Policy
	if p.ID != "" {
		if !storeutil.ValidID(p.ID) {
			return store.Policy{}, s.notFound("policy %q", p.ID)
		}
		out, err = scanPolicy(s.W.QueryRow(ctx, `UPDATE policies SET name = $1, source = $2, mode = $3, updated_at = $4
			WHERE id = $5 AND dataset_id = $6 RETURNING `+policyCols, p.Name, p.Source, mode, now, p.ID, p.DatasetID))
	} else {
		out, err = scanPolicy(s.W.QueryRow(ctx, `INSERT INTO policies (id, dataset_id, name, source, mode, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)
			ON CONFLICT (dataset_id, name) DO UPDATE SET source = excluded.source, mode = excluded.mode, updated_at = excluded.updated_at
			RETURNING `+policyCols, storeutil.NewID(), p.DatasetID, p.Name, p.Source, mode, now))
	}
	if err != nil {
		return store.Policy{}, s.Fail(ctx, err, "save policy %q of dataset %s", p.Name, p.DatasetID)
	}
	return out, nil
}

// CreatePolicy creates a policy; a name the dataset already uses is
// ErrConflict (the unique constraint decides between concurrent creations).
func (s *Store) CreatePolicy(ctx context.Context, p store.Policy) (store.Policy, error) {
	mode, err := s.checkPolicy(p, "create policy")
	if err != nil {
		return store.Policy{}, err
	}
	now := s.D.Time(storeutil.Now())
	out, err := scanPolicy(s.W.QueryRow(ctx, `INSERT INTO policies (id, dataset_id, name, source, mode, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING `+policyCols, storeutil.NewID(), p.DatasetID, p.Name, p.Source, mode, now))
	if err != nil {
		return store.Policy{}, s.Fail(ctx, err, "create policy %q of dataset %s", p.Name, p.DatasetID)
	}
	return out, nil
}

// ListPolicies lists a dataset's policies by name.
func (s *Store) ListPolicies(ctx context.Context, datasetID string) ([]store.Policy, error) {
	if !storeutil.ValidID(datasetID) {
		return nil, s.notFound("dataset %q", datasetID)
	}
	var ps []store.Policy
	err := s.Read(ctx, func(tx Querier) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM datasets WHERE id = $1`, datasetID).Scan(&one); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+policyCols+` FROM policies WHERE dataset_id = $1 ORDER BY name`, datasetID)
		ps, err = collect(rows, err, scanPolicy)
		return err
	})
	if err != nil {
		return nil, s.Fail(ctx, err, "list policies of dataset %s", datasetID)
	}
	return ps, nil
}

// Policy finds a policy by id.
func (s *Store) Policy(ctx context.Context, id string) (store.Policy, error) {
	if !storeutil.ValidID(id) {
		return store.Policy{}, s.notFound("policy %q", id)
	}
	p, err := scanPolicy(s.R.QueryRow(ctx, `SELECT `+policyCols+` FROM policies WHERE id = $1`, id))
	if err != nil {
		return store.Policy{}, s.Fail(ctx, err, "policy %s", id)
	}
	return p, nil
}

// DeletePolicy removes a policy.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return s.notFound("policy %q", id)
	}
	n, err := s.W.Exec(ctx, `DELETE FROM policies WHERE id = $1`, id)
	if err != nil {
		return s.Fail(ctx, err, "delete policy %s", id)
	}
	if n == 0 {
		return s.notFound("policy %s", id)
	}
	return nil
}
