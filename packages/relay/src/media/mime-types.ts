/** The seed's extension table: the only types downloads are served as. */
const typesByExtension: Readonly<Record<string, string>> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.mp3': 'audio/mpeg',
  '.ogg': 'audio/ogg',
  '.wav': 'audio/wav',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.pdf': 'application/pdf',
};

export const fallbackMimeType = 'application/octet-stream';

export function mimeTypeForExtension(extension: string): string {
  return typesByExtension[extension.toLowerCase()] ?? fallbackMimeType;
}

/** The first extension the table maps to `mimeType`, for uploads that came without a file name. */
export function extensionForMimeType(mimeType: string): string | undefined {
  const essence = mimeType.split(';')[0]?.trim().toLowerCase();
  return Object.keys(typesByExtension).find((extension) => typesByExtension[extension] === essence);
}
