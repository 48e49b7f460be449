const SHORTCUTS: [string, string][] = [
  ["W / ↑", "Zoom in (hold to keep zooming)"],
  ["S / ↓", "Zoom out"],
  ["A / ←", "Pan left"],
  ["D / →", "Pan right"],
  ["Mouse wheel", "Zoom at the cursor"],
  ["Shift + wheel", "Pan"],
  ["Drag", "Pan in time, scroll the tracks"],
  ["Click", "Select an event; a kernel shows an arrow from its launch"],
  ["Shift + drag", "Select a time range over the tracks the drag spans; its totals open below"],
  ["M, then M", "Select a range from the pointer's first place to its second (time and tracks)"],
  ["F", "Zoom to the selected event"],
  ["Esc", "Clear the selection and the range"],
  ["?", "Show or hide this panel"],
];

export function ShortcutsPanel({ onClose }: { onClose: () => void }) {
  return (
    <aside className="card tl-shortcuts" aria-labelledby="tl-shortcuts-title">
      <div className="card-header">
        <h3 id="tl-shortcuts-title">Keyboard shortcuts</h3>
        <button type="button" className="btn btn-small" onClick={onClose}>
          Close
        </button>
      </div>
      <table className="table tl-shortcuts-table">
        <tbody>
          {SHORTCUTS.map(([keys, what]) => (
            <tr key={keys}>
              <th scope="row">
                <kbd>{keys}</kbd>
              </th>
              <td>{what}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </aside>
  );
}
