import type { RefObject } from 'preact';
import { useEffect, useLayoutEffect } from 'preact/hooks';

/** KeyLike is the part of a KeyboardEvent that picks a command. */
export interface KeyLike {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  altKey: boolean;
}

export type KeyAction = { run: string } | { blur: true } | null;

/** keyAction is what a key does with a page's keymap: run the command bound
 * to it; nothing while a modifier is held or the reader is typing in a
 * field, except that Escape then leaves the field; nothing for other keys. */
export function keyAction(e: KeyLike, typing: boolean, keys: Readonly<Record<string, unknown>>, onControl = false): KeyAction {
  if (e.ctrlKey || e.metaKey || e.altKey || typing) return e.key === 'Escape' ? { blur: true } : null;
  // Enter and Space on a focused button or link are the browser's.
  if (onControl && (e.key === 'Enter' || e.key === ' ')) return null;
  return Object.hasOwn(keys, e.key) ? { run: e.key } : null;
}

/** isControl is whether Enter on the element activates it. */
export function isControl(t: EventTarget | null): boolean {
  return t instanceof HTMLElement && t.closest('button, a[href], summary, [role="tab"]') !== null;
}

/** isTyping is whether a key goes to a field being typed in. */
export function isTyping(t: EventTarget | null): boolean {
  return t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement || (t instanceof HTMLElement && t.isContentEditable);
}

/** useKeyboardNav binds single keys to the page's commands (keyAction).
 * The listener is bound again on every render, so the commands are the
 * latest, and in a layout effect, so that the next page's listener is in
 * place in the same commit that removes this one's: a key pressed while
 * pages change is not lost. */
export function useKeyboardNav(keys: Record<string, () => void>) {
  useLayoutEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const act = keyAction(e, isTyping(e.target), keys, isControl(e.target));
      if (act && 'blur' in act) {
        if (e.target instanceof HTMLElement) e.target.blur();
      } else if (act) {
        keys[act.run]();
        e.preventDefault();
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  });
}

/** useFindKey focuses the search box when / is pressed outside a text
 * field (the dataset page's one key). */
export function useFindKey(box: RefObject<HTMLInputElement>) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === '/' && !(e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement)) {
        e.preventDefault();
        box.current?.focus();
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
}
