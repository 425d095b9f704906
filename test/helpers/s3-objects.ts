/** Every object of a bucket as text (gzip unpacked): what the secret-scanning tests read. */
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

export async function allObjects(bucket: string): Promise<{ key: string; text: string }[]> {
  const s3 = new S3Client({ endpoint: process.env.AWS_ENDPOINT_URL, forcePathStyle: true });
  const out: { key: string; text: string }[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }));
      const bytes = Buffer.from(await got.Body!.transformToByteArray());
      const text = bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes).toString() : bytes.toString();
      out.push({ key: o.Key!, text });
    }
    token = page.NextContinuationToken;
  } while (token);
  return out;
}
