/** RFC 4180 CSV: the header line, then one line per row, each ended by CRLF. Numbers are
 * written as JavaScript prints them (full precision), null and undefined as empty fields. */
export function toCsv(header: readonly string[], rows: readonly (readonly unknown[])[]): string {
  return [header, ...rows].map((fields) => `${fields.map(csvField).join(",")}\r\n`).join("");
}

function csvField(value: unknown): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
