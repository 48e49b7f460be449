/** A 2D context that records what is drawn, with the fill style and font of each call; text
 * is 6 px a character, and ``measured`` counts the texts measured. */
export function recordingContext() {
  const calls: { op: string; args: unknown[]; fillStyle: unknown; font: unknown }[] = [];
  const measured: string[] = [];
  const target: Record<string, unknown> = {
    fillStyle: "",
    strokeStyle: "",
    lineWidth: 1,
    font: "",
    textBaseline: "",
    globalAlpha: 1,
  };
  const ctx = new Proxy(target, {
    get(obj, key: string) {
      if (key in obj) return obj[key];
      if (key === "measureText")
        return (text: string) => {
          measured.push(text);
          return { width: text.length * 6 };
        };
      return (...args: unknown[]) =>
        calls.push({ op: key, args, fillStyle: obj.fillStyle, font: obj.font });
    },
    set(obj, key: string, value) {
      obj[key] = value;
      return true;
    },
  });
  return { ctx: ctx as unknown as CanvasRenderingContext2D, calls, measured };
}
