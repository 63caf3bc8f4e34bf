// Images pasted into the chat input: each becomes a thumbnail chip above the input (✕ removes
// it) and goes with the next message as a prompt image ({data: base64, mimeType}).

export interface PromptImage {
  type: "image";
  data: string;
  mimeType: string;
}

const MAX_BYTES = 5 * 1024 * 1024; // larger images are refused here with a note, not sent to fail

export class Attachments {
  private images: PromptImage[] = [];

  constructor(input: HTMLTextAreaElement, private readonly list: HTMLElement) {
    input.addEventListener("paste", (e) => {
      const files = [...(e.clipboardData?.items ?? [])].filter((i) => i.kind === "file" && i.type.startsWith("image/"))
        .map((i) => i.getAsFile()).filter((f): f is File => Boolean(f));
      if (!files.length) return; // text: pasted as usual
      e.preventDefault();
      for (const file of files) this.add(file);
    });
    list.addEventListener("click", (e) => {
      const chip = (e.target as HTMLElement).closest("button.remove")?.closest<HTMLElement>(".chip");
      if (!chip) return;
      this.images.splice(Number(chip.dataset.index), 1);
      this.show();
    });
  }

  private add(file: File): void {
    if (file.size > MAX_BYTES) {
      this.note(`The pasted image is ${(file.size / 1048576).toFixed(1)} MB; images up to 5 MB can be sent.`);
      return;
    }
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result); // data:<mime>;base64,<data>
      const comma = url.indexOf(",");
      this.images.push({ type: "image", mimeType: file.type, data: url.slice(comma + 1) });
      this.show();
    };
    reader.onerror = () => this.note(`The pasted image could not be read: ${reader.error?.message ?? "unknown error"}`);
    reader.readAsDataURL(file);
  }

  private note(text: string): void {
    const note = document.createElement("div");
    note.className = "error attach-note";
    note.textContent = text;
    this.list.append(note);
  }

  private show(): void {
    this.list.replaceChildren(...this.images.map((image, index) => {
      const chip = document.createElement("span");
      chip.className = "chip";
      chip.dataset.index = String(index);
      const img = document.createElement("img");
      img.src = `data:${image.mimeType};base64,${image.data}`;
      img.alt = `pasted image ${index + 1}`;
      const remove = document.createElement("button");
      remove.className = "remove";
      remove.title = "Remove this image";
      remove.textContent = "✕";
      chip.append(img, remove);
      return chip;
    }));
  }

  // The images for the message being sent; the chips go.
  take(): PromptImage[] {
    const taken = this.images;
    this.images = [];
    this.show();
    return taken;
  }
}
