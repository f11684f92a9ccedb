/** A text block, as in MCP's `TextContent`. */
export interface TextBlock {
  readonly type: "text";
  readonly text: string;
}

/** An image block: base64 `data` and its MIME type, as in MCP's `ImageContent`. */
export interface ImageBlock {
  readonly type: "image";
  /** Base64-encoded bytes. */
  readonly data: string;
  readonly mimeType: string;
}

/** An audio block: base64 `data` and its MIME type, as in MCP's `AudioContent`. */
export interface AudioBlock {
  readonly type: "audio";
  /** Base64-encoded bytes. */
  readonly data: string;
  readonly mimeType: string;
}

/**
 * A resource by its URI, optionally with its text: the flat form a tool's MCP embedded resource
 * (`{ type: "resource", resource: { uri, text } }`) or `resource_link` is normalised to.
 */
export interface ResourceBlock {
  readonly type: "resource";
  readonly uri: string;
  readonly mimeType?: string;
  readonly text?: string;
}

/** One piece of a tool's output. The shapes follow MCP's content blocks. */
export type ContentBlock = TextBlock | ImageBlock | AudioBlock | ResourceBlock;

/** True for blocks that carry binary media (images, audio). */
export function isMediaBlock(block: ContentBlock): block is ImageBlock | AudioBlock {
  return block.type === "image" || block.type === "audio";
}
