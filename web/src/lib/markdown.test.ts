import { describe, expect, it } from 'vitest';
import { invariantImage, parseBlocks, type Block } from './markdown';

/** shape is a block tree without offsets: kinds, list starts and item
 * contents, paragraphs as their text. */
function shape(src: string, bs: Block[]): unknown[] {
  return bs.map((b) => {
    if (b.t === 'list') return { [b.ordered ? 'ol' : 'ul']: b.items.map((it) => shape(src, it)), ...(b.start !== 1 ? { start: b.start } : {}) };
    if (b.t === 'p') return b.lines.map((l) => l.map((x) => (x.t === 'text' ? src.slice(x.s, x.e) : x.t)).join('')).join('/');
    return b.t;
  });
}
const parse = (src: string) => shape(src, parseBlocks(src));

describe('markdown lists', () => {
  it('keeps numbered items apart by blank lines in one list', () => {
    expect(parse('1. a\n\n2. b\n\n3. c')).toEqual([{ ol: [['a'], ['b'], ['c']] }]);
  });
  it('starts a numbered list at its first number', () => {
    expect(parse('3. x\n4. y')).toEqual([{ ol: [['x'], ['y']], start: 3 }]);
    expect(parse('0. zero')).toEqual([{ ol: [['zero']], start: 0 }]);
  });
  it('nests indented points inside the item above them', () => {
    const src = 'Options:\n\n1. **Option 1:**\n   - a\n     - deeper\n   - b\n\n2. **Option 2:**\n   - c\n\nWhich one?';
    expect(parse(src)).toEqual(['Options:', { ol: [['strong', { ul: [['a', { ul: [['deeper']] }], ['b']] }], ['strong', { ul: [['c']] }]] }, 'Which one?']);
  });
  it('ends a list at unindented text, and at an item of the other kind', () => {
    expect(parse('Text\n1. a\n2. b\nAfter')).toEqual(['Text', { ol: [['a'], ['b']] }, 'After']);
    expect(parse('1. a\n\nparagraph')).toEqual([{ ol: [['a']] }, 'paragraph']);
    expect(parse('- a\n\n1. b')).toEqual([{ ul: [['a']] }, { ol: [['b']] }]);
  });
  it('keeps paragraphs inside a loose item', () => {
    expect(parse('1. first\n\n   more of it\n2. second')).toEqual([{ ol: [['first', 'more of it'], ['second']] }]);
  });
  it('keeps source offsets in nested items', () => {
    const src = '1. top\n   - inner';
    const ol = parseBlocks(src)[0] as Extract<Block, { t: 'list' }>;
    const ul = ol.items[0][1] as Extract<Block, { t: 'list' }>;
    const text = (ul.items[0][0] as Extract<Block, { t: 'p' }>).lines[0][0] as { s: number; e: number };
    expect(src.slice(text.s, text.e)).toBe('inner');
  });
  it('stops nesting at a bounded depth on hostile input', () => {
    const src = Array.from({ length: 300 }, (_, i) => ' '.repeat(i * 2) + '- x').join('\n');
    let depth = 0;
    let bs: Block[] = parseBlocks(src);
    while (bs[0]?.t === 'list') {
      depth++;
      bs = bs[0].items[bs[0].items.length - 1];
    }
    expect(depth).toBeLessThanOrEqual(8);
  });
});

describe('Invariant images', () => {
  it('reads local_base64_img content as a raster data URL, and nothing else', () => {
    expect(invariantImage('local_base64_img: iVBORw0KGgoAAAA\nNSUhEUg==')).toBe('data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==');
    expect(invariantImage('local_base64_img: /9j/4AAQ')).toBe('data:image/jpeg;base64,/9j/4AAQ');
    expect(invariantImage('local_base64_img: data:image/gif;base64,R0lGODlh')).toBe('data:image/gif;base64,R0lGODlh');
    expect(invariantImage('local_base64_img: data:image/svg+xml;base64,PHN2Zy8+')).toBeNull();
    expect(invariantImage('local_base64_img: "><img src=x onerror=alert(1)>')).toBeNull();
    expect(invariantImage('local_base64_img: PHN2Zz4=')).toBeNull(); // not a raster image's bytes
    expect(invariantImage('an image: iVBORw0KGgo')).toBeNull();
  });
});
