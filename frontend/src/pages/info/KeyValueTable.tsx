import { displayValue } from "./summary";

/**
 * A JSON object as a two-column table, keys sorted: the database does not keep the order in
 * which they were sent.
 */
export function KeyValueTable({ value, empty }: { value: unknown; empty: string }) {
  const entries =
    typeof value === "object" && value !== null && !Array.isArray(value)
      ? Object.entries(value).sort(([a], [b]) => a.localeCompare(b))
      : [];
  if (entries.length === 0) return <p className="muted">{empty}</p>;
  return (
    <table className="table table-compact">
      <tbody>
        {entries.map(([key, item]) => (
          <tr key={key}>
            <th scope="row">{key}</th>
            <td className="mono">{displayValue(item)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
