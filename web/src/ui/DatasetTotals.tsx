// The dataset header's totals: tokens in and out and cost of every trace
// (GET /datasets/{id}/totals), the estimated part marked as in the trace
// header.
import { useEffect, useState } from 'preact/hooks';
import { api, type DashUsage } from '../lib/api';
import { costTitle, fmtCost } from '../lib/usage';
import { fmtInt } from './common';

export function DatasetTotals({ id }: { id: string }) {
  const [t, setT] = useState<DashUsage | null>(null);
  useEffect(() => {
    let stop = false;
    api.totals(id).then(
      (x) => !stop && setT(x),
      () => {}, // the header does without
    );
    return () => {
      stop = true;
    };
  }, [id]);
  if (!t || (!t.input_tokens && !t.output_tokens && !t.cost)) return null;
  const est = t.cost_estimated > 0;
  return (
    <span class="muted ds-totals">
      <span class="ds-tokens">
        {fmtInt(t.input_tokens)} in · {fmtInt(t.output_tokens)} out
      </span>
      {' · '}
      <span class="ds-cost" title={costTitle(est) + (t.unpriced_spans ? `; ${t.unpriced_spans} spans with tokens have no known price and are left out` : '')}>
        cost <b>{fmtCost(t.cost)}</b>
        {est && <span class="est"> est.</span>}
      </span>
    </span>
  );
}
