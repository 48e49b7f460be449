import { useDiskUse } from "../../api/settings";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { formatBytes } from "../../lib/format";

/** What the server's storage holds (its data directory or a bucket), and the room left. */
export function DiskUse() {
  const use = useDiskUse();
  return (
    <section className="card settings-card" aria-labelledby="disk-heading">
      <h2 id="disk-heading">Disk use</h2>
      {use.isPending && <Loading what="disk use" />}
      {use.isError && <ErrorAlert error={use.error} />}
      {use.data && (
        <dl className="facts" data-testid="disk-use">
          <dt>Kept in</dt>
          <dd>{use.data.where}</dd>
          <dt>Raw uploads</dt>
          <dd>{formatBytes(use.data.raw_bytes)}</dd>
          <dt>Parsed timelines</dt>
          <dd>{formatBytes(use.data.stores_bytes)}</dd>
          <dt>Uploads in progress</dt>
          <dd>{formatBytes(use.data.uploads_bytes)}</dd>
          <dt>Total</dt>
          <dd>
            <strong>{formatBytes(use.data.total_bytes)}</strong>
          </dd>
          {use.data.free_bytes != null && use.data.capacity_bytes != null ? (
            <>
              <dt>Free on the disk</dt>
              <dd>
                {formatBytes(use.data.free_bytes)} of {formatBytes(use.data.capacity_bytes)}
              </dd>
            </>
          ) : (
            <>
              <dt>Cached on this server</dt>
              <dd>{formatBytes(use.data.cache_bytes)}</dd>
            </>
          )}
        </dl>
      )}
    </section>
  );
}
