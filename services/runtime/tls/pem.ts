/**
 * PEM text split into its blocks (`-----BEGIN LABEL-----` … `-----END
 * LABEL-----`), and certificates read from it. What lies between blocks
 * (the comments of a CA bundle file) is ignored. Messages name the source
 * and the block's position, never its contents: a key file's text must not
 * reach a log.
 */
import { X509Certificate } from "node:crypto";

/** One PEM block: its label (`CERTIFICATE`, `PRIVATE KEY`, …) and its whole text. */
export interface PemBlock {
  readonly label: string;
  readonly text: string;
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

/** The complete PEM blocks in `text`, in order (an unterminated block is not one). */
export function pemBlocks(text: string): PemBlock[] {
  return [...text.matchAll(BLOCK)].map((match) => ({
    label: match[1] as string,
    text: `${match[0]}\n`,
  }));
}

/**
 * Reads every `CERTIFICATE` block of `text`, in order. Throws an Error that
 * names `source` when there is none, when a block has another label
 * (`allowOthers` false; a private key in a certificate file is a mistake
 * worth a clear error), or when a certificate does not parse.
 */
export function pemCertificates(
  text: string,
  source: string,
  allowOthers = false,
): X509Certificate[] {
  const blocks = pemBlocks(text);
  const certificates: X509Certificate[] = [];
  for (const [index, block] of blocks.entries()) {
    if (block.label !== "CERTIFICATE") {
      if (allowOthers) continue;
      throw new Error(
        `${source}: block ${index + 1} is a ${block.label}, where only CERTIFICATE blocks belong`,
      );
    }
    try {
      certificates.push(new X509Certificate(block.text));
    } catch (error) {
      throw new Error(
        `${source}: certificate ${index + 1} does not parse (${(error as Error).message})`,
      );
    }
  }
  if (certificates.length === 0) {
    throw new Error(
      text.trim() === ""
        ? `${source} is empty`
        : `${source} holds no complete PEM CERTIFICATE block`,
    );
  }
  return certificates;
}

/** A distinguished name as Node prints it (one attribute a line), on one line. */
export function oneLineName(name: string): string {
  return name.trim().split("\n").join(", ") || "(no name)";
}

/** A short description of a certificate for messages: its subject and serial. */
export function describeCertificate(certificate: X509Certificate): string {
  return `${oneLineName(certificate.subject)} serial ${certificate.serialNumber}`;
}
