import { describe, expect, test } from 'vitest';
import { prettyJSON } from './prettyjson';

describe('prettyJSON', () => {
  test('prints as JSON.stringify(v, null, 2) does, strings kept as written', () => {
    const docs = ['{"a":1,"b":[1,2,{"c":"x, y: {z}"}],"d":{},"e":[],"f":null,"g":"q\\"uote\\\\"}', '[ 1 , -2.5 , true , "s" ]', '{"nested":{"deep":{"deeper":[[],[{}]]}}}'];
    for (const d of docs) expect(prettyJSON(d)!.text).toBe(JSON.stringify(JSON.parse(d), null, 2));
  });
  test('already printed text gives null', () => {
    expect(prettyJSON(JSON.stringify({ a: [1, { b: 2 }] }, null, 2))).toBeNull();
  });
  test('every source character but dropped whitespace maps to the same character', () => {
    const src = '{ "name" : "Ana Lima",\n "ids": [ 12, "x\\"y" ], "ok":true }';
    const p = prettyJSON(src)!;
    for (let o = 0; o < src.length; o++) {
      if (/\s/.test(src[o]) && !inString(src, o)) continue;
      expect(p.text[p.toPretty(o)]).toBe(src[o]);
    }
    // And back: every printed character but whitespace maps to the same one.
    for (let q = 0; q < p.text.length; q++) {
      if (!/\s/.test(p.text[q])) expect(src[p.toSource(q)]).toBe(p.text[q]);
    }
    // A range over a token maps to the same text.
    const s = src.indexOf('Ana Lima');
    expect(p.text.slice(p.toPretty(s), p.toPretty(s + 8))).toBe('Ana Lima');
  });
});

function inString(src: string, o: number): boolean {
  let inside = false;
  for (let i = 0; i < o; i++) {
    if (src[i] === '\\' && inside) i++;
    else if (src[i] === '"') inside = !inside;
  }
  return inside;
}
