// Long values (event bodies, push bodies, a device's reported state) of a multi-row statement packed into one binary
// parameter, which node-postgres sends as it is, and which the statement cuts with substring(): sent in text arrays
// instead, each was escaped on the way out (a push body was hex, twice its size) and parsed back by the server's
// array_in, 7 % of the server's CPU at saturation (perf).

export class PackedValues {
  private readonly values: Array<string | Uint8Array> = [];
  private readonly sizes: number[] = [];
  private size = 0;

  /** Adds a value; returns where the statement finds it: its 1-based start and its length, in bytes. */
  add(value: string | Uint8Array): [start: number, length: number] {
    const length = typeof value === 'string' ? Buffer.byteLength(value) : value.byteLength;
    const start = this.size + 1;
    this.values.push(value);
    this.sizes.push(length);
    this.size += length;
    return [start, length];
  }

  /** The parameter: every value added, in order. */
  bytes(): Buffer {
    const out = Buffer.allocUnsafe(this.size);
    let at = 0;
    this.values.forEach((v, i) => {
      if (typeof v === 'string') out.write(v, at);
      else out.set(v, at);
      at += this.sizes[i]!;
    });
    return out;
  }
}

/** SQL for the bytes at (start, length) of the packed parameter $p, as bytea. */
export const packedBytes = (p: number, start: string, length: string): string =>
  `substring($${p}::bytea FROM ${start} FOR ${length})`;

/** SQL for the text at (start, length) of the packed parameter $p (UTF-8). */
export const packedText = (p: number, start: string, length: string): string =>
  `convert_from(${packedBytes(p, start, length)}, 'UTF8')`;
