/**
 * A regenerated section of bench/REPORT.md: the text between its own begin
 * and end markers, so each mode of `npm run bench` rewrites only its part.
 * Pure.
 */

/** A section's markers and the heading it gets when first appended. */
export interface ReportSection {
  readonly begin: string;
  readonly end: string;
  readonly heading: string;
}

/**
 * `previous` with the text from `marks.begin` to `marks.end` replaced by
 * `section` (which carries both markers); appended under `marks.heading`
 * when `previous` has no such section, or a new report when undefined.
 */
export function replaceSection(
  previous: string | undefined,
  marks: ReportSection,
  section: string,
): string {
  if (previous === undefined) return `# Benchmark report\n\n## ${marks.heading}\n\n${section}\n`;
  const begin = previous.indexOf(marks.begin);
  const end = previous.indexOf(marks.end);
  if (begin !== -1 && end > begin) {
    return `${previous.slice(0, begin)}${section}${previous.slice(end + marks.end.length)}`;
  }
  return `${previous.trimEnd()}\n\n## ${marks.heading}\n\n${section}\n`;
}
