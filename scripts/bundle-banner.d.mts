/** The first line of every Lambda bundle (scripts/bundle-banner.mjs says why it reads as it does). */
export declare const BUNDLE_BANNER: string;
