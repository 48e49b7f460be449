type Props = {
  page: number;
  pageSize: number;
  count: number;
  onPage: (page: number) => void;
};

export function Pagination({ page, pageSize, count, onPage }: Props) {
  const pages = Math.max(1, Math.ceil(count / pageSize));
  const first = count === 0 ? 0 : (page - 1) * pageSize + 1;
  const last = Math.min(count, page * pageSize);
  return (
    <nav className="pagination" aria-label="Pagination">
      <span className="muted">
        {first.toLocaleString()}–{last.toLocaleString()} of {count.toLocaleString()}
      </span>
      <button
        type="button"
        className="btn btn-small"
        disabled={page <= 1}
        onClick={() => onPage(1)}
      >
        First
      </button>
      <button
        type="button"
        className="btn btn-small"
        disabled={page <= 1}
        onClick={() => onPage(page - 1)}
      >
        Previous
      </button>
      <span>
        Page {page.toLocaleString()} of {pages.toLocaleString()}
      </span>
      <button
        type="button"
        className="btn btn-small"
        disabled={page >= pages}
        onClick={() => onPage(page + 1)}
      >
        Next
      </button>
      <button
        type="button"
        className="btn btn-small"
        disabled={page >= pages}
        onClick={() => onPage(pages)}
      >
        Last
      </button>
    </nav>
  );
}
